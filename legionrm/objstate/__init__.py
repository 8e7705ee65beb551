"""legionrm.objstate: objects' persistent state, as vaults keep it.

Pure cores (no Ray): :mod:`~legionrm.objstate.shelf` (where the bytes of an
object's persistent representation live: a directory by default, memory in
tests, anything with the :class:`StateShelf` methods) and
:mod:`~legionrm.objstate.hooks` (how an instance's state becomes bytes and
back: its class's ``__legion_save__`` / ``__legion_restore__`` pair, else its
pickled attributes).  The Ray shells live in ``objstate.actor``; the
Scheduler's deactivate / activate / migrate in
:mod:`legionrm.scheduler.mobility`.  Below the host objects and the
Scheduler, which both import it: it imports neither.
"""

from legionrm.objstate.hooks import (
    PersistentState,
    StateError,
    restore_state,
    save_state,
    with_state_hooks,
)
from legionrm.objstate.shelf import (
    GB,
    DirectoryShelf,
    MemoryShelf,
    StateShelf,
    check_object_id,
)

__all__ = [
    "GB", "DirectoryShelf", "MemoryShelf", "PersistentState", "StateError", "StateShelf", "check_object_id",
    "restore_state", "save_state", "with_state_hooks",
]
