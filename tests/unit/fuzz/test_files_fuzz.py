"""Fuzz every file command (cluster, request, simulate, place and pools
files): whatever the file holds, the loader answers with a LegionError (a
clean message, exit 2) or a result, never another exception, within two
seconds; and a bad number where a size, count or amount is asked is refused,
never run."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from legionrm.errors import LegionError
from tests.unit.fuzz import gen
from tests.unit.fuzz.loaders import LOADERS, write

SEEDS = {"cluster": gen.CLUSTER, "request": gen.REQUEST, "simulate": gen.SIMULATE, "place": gen.PLACE,
         "pools": gen.POOLS}


def _try(kind: str, text: str) -> None:
    path = write(text, f"{kind}.toml")
    try:
        LOADERS[kind](path)
    except LegionError:
        pass


# (what to read from each seed's result, what it must be): a loader that lost a
# table or a key would answer otherwise
SEED_RESULTS: dict[str, tuple[Callable[[Any], object], object]] = {
    "cluster": (lambda spec: [h.name for h in spec.hosts], ["n1", "n2", "g"]),
    "request": (lambda req: (req.request_id, req.identity.user, [(o.class_name, o.count) for o in req.objects]),
                ("r1", "alice", [("Worker", 2)])),
    "simulate": (lambda cycles: (len(cycles), cycles[0].jobs["j1"].processes, cycles[0].jobs["j1"].machines),
                 (3, 2, {"m1": 2})),
    "place": (lambda placed: (placed["j"].status, placed["j"].earliest_start), ("not_now", 100.0)),  # n1 busy to 100
    "pools": (lambda out: (out["admitted"], out["pools"]["/a"]["entitlement"]["cpu"]), (["g"], 8.0)),
}


@pytest.mark.parametrize("kind", list(SEEDS))
def test_every_seed_is_a_good_file(kind: str) -> None:
    read, expected = SEED_RESULTS[kind]
    assert read(LOADERS[kind](write(gen.dump(SEEDS[kind]), f"{kind}.toml"))) == expected


def _mutation_test(kind: str):  # type: ignore[no-untyped-def]
    @gen.FUZZ
    @given(doc=gen.mutated(SEEDS[kind]))
    def test(doc: dict) -> None:
        _try(kind, gen.dump(doc))

    test.__name__ = f"test_mutated_{kind}_files"
    return test


test_mutated_cluster_files = _mutation_test("cluster")
test_mutated_request_files = _mutation_test("request")
test_mutated_simulate_files = _mutation_test("simulate")
test_mutated_place_files = _mutation_test("place")
test_mutated_pools_files = _mutation_test("pools")

FRAGMENTS = ["[[host]]", "[[pool]]", "[pool.cpu]", "[[job]]", "[[node]]", "[scheduler]", "[capacity]", "[[gang]]",
             "[[object]]", "[identity]", "[[machine]]", "[[event]]", 'name = "a"', "count = 3", "cpu = -inf",
             "memory_gb = nan", "x = " + "[" * 50, "]" * 50, "{", "}", "=", "\n", '"', "'''", "9" * 5000, "#", "\x00",
             "tasks = [{cpu = 1}]", 'path = "/a"', 'select = "1:ncpus=1"', 'user = "u"', "cycle = 999999999"]


@pytest.mark.parametrize("kind", list(SEEDS))
@gen.FUZZ
@given(parts=st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=10)), max_size=12))
def test_raw_text(kind: str, parts: list[str]) -> None:
    _try(kind, "\n".join(parts))


@pytest.mark.parametrize("kind", list(SEEDS))
def test_a_bad_number_where_a_size_is_asked_is_refused(kind: str) -> None:
    for where in gen.SIZE_KEYS[kind]:
        for bad in gen.BAD_NUMBERS:
            doc = gen.copy(SEEDS[kind])
            target = doc
            for p in where[:-1]:
                target = target[p]
            target[where[-1]] = bad
            with pytest.raises(LegionError):
                LOADERS[kind](write(gen.dump(doc), f"{kind}.toml"))
