"""Save and restore hooks: a class's own pair, the pickled default, and the mistakes."""

from __future__ import annotations

import threading

import pytest

from legionrm.objstate import (
    PersistentState,
    StateError,
    restore_state,
    save_state,
    with_state_hooks,
)


class Counter:
    def __init__(self, start: int = 0) -> None:
        self.count = start
        self.log: list[str] = []

    def inc(self) -> int:
        self.count += 1
        self.log.append("inc")
        return self.count


class Custom:
    """Saves only its count, as text."""

    def __init__(self) -> None:
        self.count, self.cache = 0, {"big": "not saved"}

    def __legion_save__(self) -> bytes:
        return str(self.count).encode()

    def __legion_restore__(self, data: bytes) -> None:
        self.count = int(data.decode())


class HalfHooks:
    def __legion_save__(self) -> bytes:
        return b""


class NotBytes:
    def __legion_save__(self):
        return "text"

    def __legion_restore__(self, data: bytes) -> None:
        pass


class Unpicklable:
    def __init__(self) -> None:
        self.lock = threading.Lock()


class Slots:
    __slots__ = ("a",)

    def __init__(self) -> None:
        self.a = 1


@pytest.mark.parametrize("make, change, read", [
    (lambda: Counter(5), lambda o: (o.inc(), o.inc()), lambda o: (o.count, o.log)),
    (Custom, lambda o: setattr(o, "count", 41), lambda o: o.count),
    (Slots, lambda o: setattr(o, "a", 9), lambda o: o.a),
], ids=["pickled-attributes", "own-hooks", "slots"])
def test_state_round_trips_into_a_fresh_instance(make, change, read) -> None:
    obj = make()
    change(obj)
    data = save_state(obj)
    fresh = make()
    assert read(fresh) != read(obj)
    restore_state(fresh, data)
    assert read(fresh) == read(obj)


def test_own_hooks_decide_what_is_saved() -> None:
    obj = Custom()
    obj.count = 7
    assert save_state(obj) == b"7"


@pytest.mark.parametrize("obj, match", [
    (HalfHooks(), "defines __legion_save__ but not __legion_restore__"),
    (NotBytes(), "returned str, not bytes"),
    (Unpicklable(), "cannot save the state of Unpicklable"),
], ids=["half-a-pair", "not-bytes", "unpicklable"])
def test_what_cannot_be_saved_says_why(obj, match: str) -> None:
    with pytest.raises(StateError, match=match):
        save_state(obj)


def test_garbage_cannot_be_restored() -> None:
    with pytest.raises(StateError, match="cannot restore the state of Counter"):
        restore_state(Counter(), b"not a pickle")


def test_with_state_hooks_adds_the_host_methods_once() -> None:
    cls = with_state_hooks(Counter)
    assert cls is with_state_hooks(Counter) and issubclass(cls, Counter) and cls.__name__ == "Counter"
    a = cls(1)
    a.inc()
    b = cls(1)
    assert b.legion_restore_state(a.legion_save_state()) is True and b.count == 2
    assert with_state_hooks(cls) is cls and issubclass(cls, PersistentState)
