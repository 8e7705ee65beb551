"""The one place an error becomes what a user sees.

Every command's failure -- a :class:`LegionError` raised here, or one raised
in an actor and wrapped by Ray (``RayTaskError``), a dead actor
(``RayActorError``), a call that timed out (``GetTimeoutError``) -- becomes a
:class:`Failure`: a code and a clean message (no traceback, no colour
codes), printed as one ``legionrm CMD: message`` on stderr or, under
``--json``, as one JSON object on stdout; the exit status is 2.

Ray's exception classes are recognised by name, so this module (and every
offline command) never imports Ray.
"""

from __future__ import annotations

import json
import re
from collections import namedtuple

from legionrm import codes
from legionrm.errors import LegionError

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

# Ray class name -> (code, what it means for a user); the first match in the MRO wins
_RAY = (
    ("GetTimeoutError", codes.CLI_TIMEOUT, "the running system did not answer in time"),
    ("ActorDiedError", codes.CLI_ACTOR_DIED, "a legionrm actor died"),
    ("ActorUnavailableError", codes.CLI_ACTOR_UNAVAILABLE, "a legionrm actor is unreachable"),
    ("RayActorError", codes.CLI_ACTOR_DIED, "a legionrm actor died or is unreachable"),
    ("RaySystemError", codes.CLI_RAY_SYSTEM, "Ray failed"),
    ("RayError", codes.CLI_RAY, "Ray failed"),
)


class Failure(namedtuple("Failure", ("code", "message"))):
    """What a user is told: a ``code`` (``ConfigError``, ``timeout``, ...) and a ``message`` (both str).
    (collections' namedtuple, not typing's NamedTuple: a CLI call does not load typing.)"""

    __slots__ = ()

    def line(self, command: str) -> str:
        return f"legionrm {command}: {self.message}"

    def json(self, command: str) -> str:
        return json.dumps({"error": {"command": command, "code": self.code, "message": self.message}})


def _names(exc: BaseException) -> list[str]:
    return [c.__name__ for c in type(exc).__mro__]


def clean(text: str) -> str:
    """``text`` without terminal colour codes or trailing blanks."""
    return _ANSI.sub("", text).rstrip()


def unwrap(exc: BaseException) -> BaseException:
    """The exception behind Ray's task wrappers (``RayTaskError.cause``), or ``exc``."""
    for _ in range(8):  # wrappers nest when an actor's call to another actor failed
        cause = getattr(exc, "cause", None)
        if "RayTaskError" in _names(exc) and isinstance(cause, BaseException):
            exc = cause
        else:
            break
    return exc


def describe(exc: BaseException) -> Failure | None:
    """The :class:`Failure` for ``exc``; None for an error that is a bug (let it show)."""
    inner = unwrap(exc)
    if isinstance(inner, LegionError):
        code = getattr(inner, "code", None) or type(inner).__name__
        return Failure(str(code), clean(str(inner)))
    names = _names(inner)
    for name, code, meaning in _RAY:
        if name in names:
            detail = _first_line(inner)
            return Failure(code, f"{meaning}: {detail}" if detail else meaning)
    if inner is not exc:  # an actor raised something that is not a LegionError: a bug there, said in one line
        return Failure(codes.CLI_INTERNAL, f"{type(inner).__name__} in the running system: {_first_line(inner)}")
    if isinstance(inner, ConnectionError):
        return Failure(codes.CLI_NOT_RUNNING, f"cannot reach the system: {_first_line(inner)}")
    return None


def _first_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in clean(str(exc)).splitlines() if ln.strip()]
    return lines[0] if lines else ""
