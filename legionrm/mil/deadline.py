"""The evaluation deadline: a cap on how long one MIL evaluation may run.

An evaluation (a query over a table, or over a list of records) is given a
:class:`Deadline`; the engines call :meth:`Deadline.check` at safe points --
after every node of the query over the whole table, between batches of
distinct strings inside ``match``/``int()``/``float()``/string comparison,
and every :data:`RECORDS_PER_CHECK` records in the per-record loop -- and it
raises :class:`MILTimeoutError` once the time is up, naming the clause being
evaluated (with a caret under it) and how far the evaluation got.  Nothing is
left half-changed: a deadline only stops work, results already cached per
string stay correct.

The clock is injected (``time.monotonic`` by default), so a test can drive a
deadline with a counter instead of wall time.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from legionrm.errors import MILError
from legionrm.mil.nodes import Span

DEFAULT_DEADLINE_S = 10.0
"""The deadline an evaluation gets when its caller names none, in seconds."""

RECORDS_PER_CHECK = 64
"""Records the per-record engine evaluates between two deadline checks."""

Clock = Callable[[], float]


class MILTimeoutError(MILError):
    """A MIL query whose evaluation ran past its deadline.

    Like every :class:`~legionrm.errors.MILError` it carries the query text and
    the line and column of the clause being evaluated when time ran out, so the
    message shows a caret under it.  ``deadline_s`` is the limit that passed.

    (Defined here because ``legionrm/errors.py`` has another owner; it belongs
    beside ``MILTypeError`` there.)
    """

    def __init__(self, message: str, *, deadline_s: float = 0.0, text: str = "", line: int = 0, column: int = 0) -> None:
        self.deadline_s = deadline_s
        super().__init__(message, text=text, line=line, column=column)


class Deadline:
    """The moment ``seconds`` after creation on ``clock`` by which an evaluation
    of query ``text`` must finish."""

    __slots__ = ("clock", "end", "seconds", "text")

    def __init__(self, seconds: float, text: str = "", clock: Clock = time.monotonic) -> None:
        self.seconds = float(seconds)
        self.text = text
        self.clock = clock
        self.end = clock() + self.seconds

    def check(self, span: Span | None, progress: str) -> None:
        """Raise :class:`MILTimeoutError` if the deadline has passed; ``span`` is
        the clause being evaluated (None: the whole query), ``progress`` says
        how far the evaluation got ("over 100000 rows", "after 640 records")."""
        if self.clock() <= self.end:
            return
        if span is None:
            line, column, clause = (1, 1, self.text) if self.text else (0, 0, "")
        else:
            line, column, clause = span.line, span.column, self.text[span.start : span.end]
        shown = clause if len(clause) <= 60 else clause[:57] + "..."
        what = f" while evaluating {shown!r}" if shown else ""
        raise MILTimeoutError(
            f"query evaluation passed its deadline of {self.seconds:g} s{what} {progress}",
            deadline_s=self.seconds,
            text=self.text,
            line=line,
            column=column,
        )
