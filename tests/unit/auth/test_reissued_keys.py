"""A verifier never checks a call against a key that was issued anew (issue 27, item 7).

A second boot on the same home gives every agent (host, vault, class) a fresh
key and rewrites ``registry.json`` while the verifiers (the Collection, each
actor's guard, each host's attestation check) may already have read the old
file.  A verifier that rereads the registry only for names it does not know
keeps the old keys of names it does: every host of the earlier boot is then
refused ``auth.bad_signature``.  These tests fail on such a cache.
"""

from __future__ import annotations

import time

import pytest

from legionrm import codes
from legionrm.auth.attest import attest
from legionrm.auth.guard import (
    SCHEDULER,
    Guard,
    ReloadingRegistry,
    auth_home,
    ensure_home,
    host_attestations,
    load_agent,
)
from legionrm.auth.proof import CallSigner, VerifiedCaller
from legionrm.auth.registry import Registry
from legionrm.models import Identity, Resources


def _sign(cred, call: str = "join", args: dict | None = None, to: str = "collection"):
    return CallSigner(cred, time.time).sign(call, args or {"name": "h3"}, to=to)


def test_a_key_issued_anew_by_another_process_is_read_at_the_next_lookup(tmp_path) -> None:
    first = Registry(tmp_path).add_agent("host", "h3")
    seen = ReloadingRegistry(Registry(tmp_path))  # a verifier that read the first boot's registry
    assert seen.principal("host:h3").public_key == first.public_key_b64
    again = Registry(tmp_path).add_agent("host", "h3")  # the second boot, another process
    assert again.public_key_b64 != first.public_key_b64
    assert seen.principal("host:h3").public_key == again.public_key_b64


def test_a_removed_user_is_forgotten_at_the_next_lookup(tmp_path) -> None:
    Registry(tmp_path).add_user("ann")
    seen = ReloadingRegistry(Registry(tmp_path))
    assert seen.principal("ann") is not None
    Registry(tmp_path).remove_user("ann")
    assert seen.principal("ann") is None


@pytest.mark.parametrize("kind, name", [("host", "h3"), ("vault", "vault-uva"), ("class", "Worker")],
                         ids=["host", "vault", "class"])
def test_a_guard_up_before_the_second_boot_accepts_the_agents_new_keys(tmp_path, kind, name) -> None:
    home = tmp_path / "home"
    ensure_home(home, operator="ops")
    old = Registry(auth_home(home)).add_agent(kind, name)  # the first boot
    guard = Guard.for_home(home, by="collection")
    assert isinstance(guard.check(_sign(old), "join", {"name": "h3"}), VerifiedCaller)
    ensure_home(home, operator="ops")  # the second boot on the same home
    new = Registry(auth_home(home)).add_agent(kind, name)
    got = guard.check(_sign(new), "join", {"name": "h3"})
    assert isinstance(got, VerifiedCaller), got
    stale = guard.check(_sign(old), "join", {"name": "h3"})  # the dead boot's key is no good any more
    assert not stale and stale.code == codes.AUTH_BAD_SIGNATURE


def test_a_host_checks_attestations_with_the_schedulers_current_key(tmp_path) -> None:
    home = tmp_path / "home"
    registry = ensure_home(home, operator="ops")
    registry.add_user("ann")
    check = host_attestations(home, by="h1")  # a host up before the scheduler's key is issued anew
    ensure_home(home, operator="ops")
    sched = load_agent(home, SCHEDULER)
    caller = VerifiedCaller.of(Registry(auth_home(home)).user("ann"), "scheduleObjects")
    att = attest(sched, caller, request_id="r1", host="h1", reservation="r1/k/host",
                 resources=Resources(cpus=1.0, memory_gb=1.0), now=time.time())
    got = check.verify(att, "h1")
    assert isinstance(got, Identity) and got.user == "ann", got


def test_only_a_scheduler_agent_is_trusted_to_attest(tmp_path) -> None:
    home = tmp_path / "home"
    ensure_home(home, operator="ops")
    registry = Registry(auth_home(home))
    registry.add_user("ann")
    host = registry.add_agent("host", "h2")  # a registered agent, but not a scheduler
    caller = VerifiedCaller.of(registry.user("ann"), "scheduleObjects")
    att = attest(host, caller, request_id="r1", host="h1", reservation="r1/k/host",
                 resources=Resources(cpus=1.0, memory_gb=1.0), now=time.time())
    got = host_attestations(home, by="h1").verify(att, "h1")
    assert not got and got.code == codes.AUTH_UNKNOWN_ISSUER


def test_a_new_up_forgets_the_resource_agents_of_the_boot_before(tmp_path) -> None:
    registry = Registry(tmp_path)
    registry.add_user("ops", roles=["admin"])
    registry.add_agents("host", ["h1", "ray-0a1b2c3d"])
    registry.add_agent("vault", "vault-0a1b2c3d")
    registry.add_agent("scheduler", "scheduler")
    gone = Registry(tmp_path).forget_agents(("host", "vault", "class"))
    assert gone == ["host:h1", "host:ray-0a1b2c3d", "vault:vault-0a1b2c3d"]
    assert [p.name for p in Registry(tmp_path).list_agents()] == ["scheduler:scheduler"]
    assert Registry(tmp_path).principal("ops") is not None
