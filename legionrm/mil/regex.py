"""MIL regular expressions: RE2 (linear time), bounded inputs, a bounded cache.

``match(pattern, subject)`` must not be a way to make the Collection spin: a
backtracking engine (Python's ``re``) takes time exponential in the subject
for patterns such as ``(a+)+$``.  MIL therefore matches with RE2 (the
``google-re2`` package), whose time is linear in the subject, and bounds what
it is given:

* a pattern longer than :data:`MAX_PATTERN_LENGTH` characters, one RE2 does
  not support (backreferences ``\\1``, lookaround ``(?=`` ``(?<!``, atomic
  groups, possessive quantifiers, ``\\Z``: RE2 writes it ``\\z``) or one that
  does not compile is a :class:`BadPattern` (a typed outcome with the reason);
* a subject longer than :data:`MAX_SUBJECT_LENGTH` characters, or one that is
  not valid Unicode text (a lone surrogate), cannot be searched:
  :func:`search` answers ``None`` (MIL's error value);
* compiled patterns are kept in a cache of :data:`PATTERN_CACHE_SIZE`
  entries, each compiled with at most :data:`PROGRAM_MEMORY` bytes of RE2
  memory.

Without RE2 installed there is no safe engine: :data:`AVAILABLE` is False,
every pattern is a :class:`BadPattern` saying so, and the type checker refuses
any query that calls ``match()``.  MIL never falls back to ``re``.

The dialect is RE2's (https://github.com/google/re2/wiki/Syntax); it differs
from Python's ``re`` in a few places users may meet: ``\\d`` ``\\w`` ``\\s``
``\\b`` are ASCII only (``\\pN``, ``\\pL`` are the Unicode classes), and ``$``
without ``(?m)`` matches only at the very end of the subject (not before a
final newline).  ``match`` is a search: the pattern may match anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

try:
    import re2
except ImportError:  # pragma: no cover - explicit and safe: match() is refused, never run on `re`
    re2 = None

AVAILABLE: bool = re2 is not None
"""Whether the RE2 engine is installed (without it ``match()`` is refused)."""

MAX_PATTERN_LENGTH = 1000
"""Longest pattern ``match()`` takes, in characters."""

MAX_SUBJECT_LENGTH = 65536
"""Longest subject ``match()`` searches, in characters; a longer one is error."""

PATTERN_CACHE_SIZE = 256
"""Compiled patterns (and refusals) kept, least recently used dropped first."""

PROGRAM_MEMORY = 1 << 20
"""RE2 memory budget per compiled pattern, in bytes (RE2's default is 8 MiB)."""

MISSING = "match() needs the RE2 engine (the google-re2 package), which is not installed"
"""The reason every pattern is refused when RE2 is not installed."""

_WHY_NOT = "MIL matches in linear time with RE2, which has no backreferences, lookaround or possessive quantifiers"


@dataclass(frozen=True, slots=True)
class BadPattern:
    """A pattern ``match()`` refuses, and why (``reason`` is a sentence for users)."""

    pattern: str
    reason: str


def _options() -> Any:
    opts = re2.Options()
    opts.log_errors = False  # the reason is returned, not printed on stderr
    opts.never_capture = True  # match() asks only "is there a match"
    opts.max_mem = PROGRAM_MEMORY
    return opts


_OPTIONS = _options() if AVAILABLE else None


def _reason(message: str) -> str:
    """RE2's compile error in words, with the hint that fits it."""
    if message.startswith("invalid escape sequence: \\Z"):
        return f"{message} (RE2 writes the end of the text \\z)"
    if message.startswith("invalid escape sequence: \\") and message[-1:].isdigit():
        return f"{message}: backreferences are not supported ({_WHY_NOT})"
    if message.startswith("invalid perl operator: (?"):
        return f"{message}: lookaround and atomic groups are not supported ({_WHY_NOT})"
    return f"{message} ({_WHY_NOT})" if "repetition operator" in message else message


@lru_cache(maxsize=PATTERN_CACHE_SIZE)
def compile_pattern(pattern: str) -> Any:
    """The compiled RE2 pattern, or a :class:`BadPattern` (never raises)."""
    if not AVAILABLE:
        return BadPattern(pattern, MISSING)
    if len(pattern) > MAX_PATTERN_LENGTH:
        return BadPattern(
            pattern, f"the pattern is {len(pattern)} characters long; match() takes at most {MAX_PATTERN_LENGTH}"
        )
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        raw = exc.args[0] if exc.args else "invalid pattern"
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        return BadPattern(pattern, _reason(text))
    except UnicodeEncodeError:
        return BadPattern(pattern, "the pattern is not valid Unicode text (it holds a lone surrogate)")


def search(rx: Any, subject: str) -> bool | None:
    """Does compiled pattern ``rx`` match anywhere in ``subject``?  None when the
    subject cannot be searched: longer than :data:`MAX_SUBJECT_LENGTH` or not
    valid Unicode text.  Time linear in ``len(subject)``."""
    if len(subject) > MAX_SUBJECT_LENGTH:
        return None
    try:
        return rx.search(subject) is not None
    except UnicodeEncodeError:
        return None
