"""How an instance's state becomes bytes, and bytes an instance's state again.

An instance class may define the pair

* ``__legion_save__(self) -> bytes``: its persistent representation, and
* ``__legion_restore__(self, data: bytes) -> None``: take it back (called on
  a freshly constructed instance, after ``__init__`` ran with the instance's
  original arguments);

a class that defines neither is saved as its pickled ``__getstate__()`` (for
a plain class: its attributes) and restored with ``__setstate__`` (or by
updating its attributes).  Defining only one of the pair is an error at save
and restore time (``StateError``), never a silent half.

:func:`with_state_hooks` gives a class the two methods a host calls on a
running instance (``legion_save_state`` / ``legion_restore_state``), so a
Ray actor of that class can be asked for its state; :class:`PersistentState`
is that mixin.
"""

from __future__ import annotations

import functools
import pickle
from typing import Any

SAVE, RESTORE = "__legion_save__", "__legion_restore__"
MAX_STATE_BYTES = 1 << 30
"""The largest state one object may save (1 GiB)."""


class StateError(Exception):
    """An instance's state could not be saved or restored: what, and why."""


def _hooks(obj: Any) -> tuple[Any, Any]:
    save, restore = getattr(obj, SAVE, None), getattr(obj, RESTORE, None)
    if (save is None) != (restore is None):
        have, missing = (SAVE, RESTORE) if save is not None else (RESTORE, SAVE)
        raise StateError(f"{type(obj).__name__} defines {have} but not {missing}: define both or neither")
    return save, restore


def save_state(obj: Any) -> bytes:
    """``obj``'s persistent representation (see the module doc).  Raises
    StateError when the hook returns something else than bytes, the default
    cannot pickle the state, or it exceeds :data:`MAX_STATE_BYTES`."""
    save, _ = _hooks(obj)
    try:
        data = save() if save is not None else pickle.dumps(obj.__getstate__(), protocol=pickle.HIGHEST_PROTOCOL)
    except StateError:
        raise
    except Exception as exc:
        raise StateError(f"cannot save the state of {type(obj).__name__}: {type(exc).__name__}: {exc}") from None
    if not isinstance(data, (bytes, bytearray)):
        raise StateError(f"{type(obj).__name__}.{SAVE} returned {type(data).__name__}, not bytes")
    if len(data) > MAX_STATE_BYTES:
        raise StateError(f"the state of {type(obj).__name__} is {len(data)} bytes, over {MAX_STATE_BYTES}")
    return bytes(data)


def restore_state(obj: Any, data: bytes) -> None:
    """Put ``data`` (what :func:`save_state` gave for an instance of the same
    class) back into ``obj``.  Raises StateError when it cannot."""
    _, restore = _hooks(obj)
    try:
        if restore is not None:
            restore(bytes(data))
            return
        state = pickle.loads(data)
        setstate = getattr(obj, "__setstate__", None)
        if setstate is not None:
            setstate(state)
        else:
            _apply(obj, state)
    except Exception as exc:
        raise StateError(f"cannot restore the state of {type(obj).__name__}: {type(exc).__name__}: {exc}") from None


def _apply(obj: Any, state: Any) -> None:
    """What ``object.__getstate__`` gave back onto ``obj``: its attributes'
    dict, or (dict or None, slots dict) for a class with ``__slots__``."""
    if isinstance(state, tuple) and len(state) == 2:
        attrs, slots = state
        for name, value in {**(attrs or {}), **(slots or {})}.items():
            setattr(obj, name, value)
    elif isinstance(state, dict):
        vars(obj).update(state)
    elif state is not None:
        raise TypeError(f"a {type(state).__name__} state and no __setstate__")


class PersistentState:
    """The methods a host calls on a running instance (as a Ray actor)."""

    def legion_save_state(self) -> bytes:
        return save_state(self)

    def legion_restore_state(self, data: bytes) -> bool:
        restore_state(self, data)
        return True


@functools.lru_cache(maxsize=256)
def with_state_hooks(cls: type) -> type:
    """``cls`` with :class:`PersistentState`'s methods (itself when it has
    them).  The subclass keeps ``cls``'s name; it is made once per class."""
    if issubclass(cls, PersistentState):
        return cls
    return type(cls.__name__, (cls, PersistentState), {"__doc__": cls.__doc__})
