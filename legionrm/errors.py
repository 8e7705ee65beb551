"""One exception tree for legionrm, rooted at :class:`LegionError`.

Every error a user can meet derives from ``LegionError`` so a program can
catch legionrm's failures in one place.  Errors that are about *input* (a
query, a config file, a request string) carry the place they refer to, so the
message says what is wrong and where.

Refusals are not exceptions: a resource saying "no" is an ordinary outcome and
is returned as a :class:`legionrm.models.Refusal` value.
"""

from __future__ import annotations

import unicodedata


class LegionError(Exception):
    """Root of every legionrm error."""


# --- input languages --------------------------------------------------------


def caret_at(text: str, line: int, column: int) -> str:
    """Line ``line`` of ``text`` (1-based; empty past the end) and, below it, a
    caret under column ``column`` as a terminal shows it (see :func:`_pad`)."""
    lines = text.splitlines()
    src = lines[line - 1] if 0 < line <= len(lines) else ""
    return f"{src}\n{_pad(src[: max(column - 1, 0)])}^"


def _pad(prefix: str) -> str:
    """Blank space as wide on a terminal as ``prefix``: its tabs kept, a wide
    (East Asian) character as two spaces, a combining mark as none."""
    out = []
    for ch in prefix:
        if ch == "\t":
            out.append("\t")
        elif unicodedata.combining(ch):
            continue
        else:
            out.append("  " if unicodedata.east_asian_width(ch) in ("W", "F") else " ")
    return "".join(out)


class SourceError(LegionError):
    """An error at a place in some source text (a query, a select string).

    ``line`` and ``column`` are 1-based; ``caret`` is the offending source line
    with a ``^`` under the column, ready to print.
    """

    def __init__(
        self,
        message: str,
        *,
        text: str = "",
        line: int = 0,
        column: int = 0,
        expected: tuple[str, ...] = (),
    ) -> None:
        self.message = message
        self.text = text
        self.line = line
        self.column = column
        self.expected = tuple(expected)
        super().__init__(self.render())

    @property
    def caret(self) -> str:
        """The offending line with a caret under the column ('' if unknown)."""
        if not self.text or self.line <= 0:
            return ""
        return caret_at(self.text, self.line, self.column)

    def render(self) -> str:
        where = f"line {self.line}, column {self.column}: " if self.line else ""
        msg = f"{where}{self.message}"
        if self.expected:
            msg += f" (expected {', '.join(self.expected)})"
        caret = self.caret
        return f"{msg}\n{caret}" if caret else msg


class MILError(SourceError):
    """Any error in a MIL query."""


class MILSyntaxError(MILError):
    """A MIL query that does not parse."""


class MILTypeError(MILError):
    """A MIL query with a type error certain before evaluation (``"a" + 1``)."""


class SelectSyntaxError(SourceError):
    """A PBS-style select / place string that does not parse."""


# --- configuration ----------------------------------------------------------


class ConfigError(LegionError):
    """A configuration file that is malformed; names the file, table and key."""

    def __init__(self, message: str, *, file: str = "", table: str = "", key: str = "") -> None:
        self.file, self.table, self.key = file, table, key
        where = ": ".join(p for p in (file, table + (f".{key}" if key and table else key)) if p)
        super().__init__(f"{where}: {message}" if where else message)


class PoolValidationError(LegionError):
    """A resource-pool change that breaks one of the pool tree's rules."""


# --- the running system -----------------------------------------------------


class CollectionError(LegionError):
    """A Collection operation on something it does not hold."""


class UnknownResourceError(CollectionError, KeyError):
    """A resource id that the Collection (or a host group) does not know."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else "unknown resource"


class SchedulingError(LegionError):
    """A scheduling request that cannot be handled at all (malformed), or a
    call about one that cannot be answered.  ``code`` (a registered code,
    :mod:`legionrm.codes`) says which, where a caller may act on it; None
    where the message is all there is."""

    code: str | None = None  # (also on a copy Ray made without calling __init__)

    def __init__(self, message: str = "", *, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


class EnactmentError(LegionError):
    """The enactor could not talk to a resource for a reason other than a veto."""


class SystemNotRunningError(LegionError):
    """No legionrm system is running where one was expected."""


class ResourcesSilentError(LegionError):
    """A system booted, but some of its resources never joined its Collection
    (the message says how many, which, and why: a refused key, say)."""


# --- resource pools (appended by the respool work) ----------------------------


class PoolRuleError(PoolValidationError):
    """A pool config refused by one validator rule.

    ``path`` is the pool being created or updated, ``rule`` the validator
    (``resource_pool``, ``cycle``, ``parent``, ``siblings``,
    ``children_reservations``, ``controller_limit``, ``path``), ``kind`` the
    resource kind involved and ``value`` / ``bound`` the two numbers compared
    (None where the rule has none).
    """

    def __init__(
        self,
        message: str,
        *,
        path: str = "",
        rule: str = "",
        kind: str | None = None,
        value: float | None = None,
        bound: float | None = None,
    ) -> None:
        self.path, self.rule, self.kind, self.value, self.bound = path, rule, kind, value, bound
        self.detail = message
        super().__init__(f"{path}: {message}" if path else message)


class PoolNotFoundError(PoolValidationError):
    """A pool path or id that the tree does not hold."""


class PoolBusyError(PoolValidationError):
    """A pool that cannot be deleted now (not a leaf, or it holds work)."""


class AdmissionError(LegionError):
    """A malformed admission call: a gang with no tasks, a non-leaf pool, a bad limit."""
