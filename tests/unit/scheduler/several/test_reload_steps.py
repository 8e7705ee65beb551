"""All or nothing over many actors (:func:`all_or_nothing`): a step that refuses or fails
part way sets back every step begun, itself too, and the answer says so in one line."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.models import Refusal
from legionrm.scheduler.several.steps import Step, all_or_nothing


class Actors:
    """Values that steps change: each step sets several keys one by one (so it can fail half way)."""

    def __init__(self, n: int) -> None:
        self.values = {f"{i}.{k}": "old" for i in range(n) for k in range(2)}

    def step(self, i: int, fail: str | None = None, undo_fails: bool = False) -> Step:
        async def apply() -> Refusal | None:
            self.values[f"{i}.0"] = "new"
            if fail == "refuse":
                return Refusal(code="reload.refused", by=f"actor{i}", reason="no")
            if fail == "raise":
                raise RuntimeError("actor died\nwith a traceback")
            self.values[f"{i}.1"] = "new"
            return None

        async def undo() -> Refusal | None:
            if undo_fails:
                raise RuntimeError("still dead")
            self.values[f"{i}.0"] = self.values[f"{i}.1"] = "old"
            return None

        return Step(f"step {i}", apply, undo)


def run(steps: list[Step]) -> Refusal | None:
    return asyncio.run(all_or_nothing(steps))


def test_every_step_applies_when_none_fails() -> None:
    a = Actors(3)
    assert run([a.step(i) for i in range(3)]) is None
    assert set(a.values.values()) == {"new"}


@pytest.mark.parametrize("at, fail, code", [
    (0, "refuse", "reload.refused"),
    (0, "raise", "reload.rolled_back"),
    (2, "refuse", "reload.rolled_back"),
    (1, "raise", "reload.rolled_back"),
], ids=["first-refuses", "first-raises", "last-refuses", "middle-raises-half-way"])
def test_a_failure_sets_back_every_step_begun(at, fail, code) -> None:
    a = Actors(3)
    got = run([a.step(i, fail if i == at else None) for i in range(3)])
    assert got is not None and got.code == code and "\n" not in got.reason
    assert set(a.values.values()) == {"old"}
    if at:
        assert f"step {at} failed" in got.reason and "set back" in got.reason


def test_an_undo_that_fails_is_named() -> None:
    a = Actors(2)
    got = run([a.step(0, undo_fails=True), a.step(1, "raise")])
    assert got is not None and got.code == "reload.partial" and "step 0" in got.reason and "still dead" in got.reason


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([None, None, "refuse", "raise"]), min_size=1, max_size=6))
def test_all_or_nothing(fails) -> None:
    a = Actors(len(fails))
    got = run([a.step(i, f) for i, f in enumerate(fails)])
    assert set(a.values.values()) == ({"new"} if got is None else {"old"})
    assert (got is None) == all(f is None for f in fails)
