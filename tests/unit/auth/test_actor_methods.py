"""The table of actor methods and roles (``actor_methods``) covers every
public method of every Ray actor class in legionrm, and every method it
guards takes a signed proof: a method added without a row, or guarded in the
table but taking no proof, fails here (the live refusals are in
``tests/ray/test_auth_ray.py``)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from legionrm.collection.actor import CollectionActor
from legionrm.enactor.actor import EnactorActor
from legionrm.hostobj.actor import ClassActor, HostActor, HostGroupActor, VaultActor
from legionrm.scheduler.actor import PoolActor, SchedulerActor
from tests.unit.auth.actor_methods import METHODS, OPEN, ROLES

ROOT = Path(__file__).resolve().parents[3] / "legionrm"
ACTORS = {c.__ray_actor_class__.__name__: c.__ray_actor_class__ for c in (
    HostActor, HostGroupActor, VaultActor, ClassActor, SchedulerActor, PoolActor, CollectionActor, EnactorActor)}


def public_methods(cls: type) -> set[str]:
    return {n for n, _ in inspect.getmembers(cls, inspect.isfunction) if not n.startswith("_")}


def remote_classes_in_source() -> set[str]:
    """Names of every class decorated ``@ray.remote(...)`` in the package."""
    found = set()
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any("ray.remote" in ast.unparse(d) for d in node.decorator_list):
                found.add(node.name)
    return found


def test_the_table_names_every_actor_class() -> None:
    assert remote_classes_in_source() == set(ACTORS) == set(METHODS)


@pytest.mark.parametrize("actor", sorted(METHODS))
def test_the_table_has_a_row_for_every_public_method_and_no_stale_row(actor: str) -> None:
    methods = public_methods(ACTORS[actor])
    assert sorted(methods - set(METHODS[actor])) == [], "methods without a role in actor_methods.METHODS"
    assert sorted(set(METHODS[actor]) - methods) == [], "rows for methods that are gone"
    assert set(METHODS[actor].values()) <= set(ROLES)


GUARDED = sorted((a, m) for a, rows in METHODS.items() for m, role in rows.items() if role != OPEN)


@pytest.mark.parametrize(("actor", "method"), GUARDED, ids=[f"{a}.{m}" for a, m in GUARDED])
def test_every_guarded_method_takes_a_proof(actor: str, method: str) -> None:
    params = inspect.signature(getattr(ACTORS[actor], method)).parameters
    attested = METHODS[actor][method] == "attested"  # the proof is the attestation inside each request
    assert attested or "proof" in params or "proofs" in params, f"{actor}.{method} takes no proof"
