"""``Command``: real work on Ray nodes, run as its owner by the node's runner.

A class whose implementation is ``"legionrm.hostobj.work:Command"`` (or any
class with ``legionrm_runner = True``) is not started as a Ray actor: the
host object of the reserved node starts each instance through its runner
(:mod:`legionrm.hostobj.runner`), as a child process of the OS account the
request's user maps to.  An instance runs one shell line (``command``) or
one Python function (``function = "module:name"``, called with ``args``, a
comma-separated string), with the request's ``env`` table, and ends when it
is done, so the request ends by itself.
"""

from __future__ import annotations

from typing import Any

from legionrm.hostobj.runner.accounts import RunError


class Command:
    """The marker class of runner work (see the module): never instantiated."""

    legionrm_runner = True

    def __init__(self, **_: Any) -> None:
        raise RunError("Command work is started by a host's runner, never as an object in a process of the service")
