"""TOML files read with a caret on syntax errors, and the small checks every
file loader shares (cluster, request, simulate, place and pools files).

Every problem is a :class:`ConfigError` naming the file, the table (with its
index, ``host[3]``) and the key, so a person can go straight to the line.
Imports nothing of legionrm but :mod:`legionrm.errors`.
"""

from __future__ import annotations

import math
import re
import tomllib
from pathlib import Path
from typing import Any, Iterable

from pydantic import ValidationError

from legionrm.errors import ConfigError, caret_at
from legionrm.models.reservations import BUILTIN_KINDS, KIND_NAME

# --- bounds every file shares (generous; past them a file is refused, not run) -----------

MAX_FILE_BYTES = 16 * 1024 * 1024
"""A TOML file larger than this (16 MiB) is refused before it is parsed."""
MAX_DEPTH = 32
"""Tables and arrays nested deeper than this are refused (no file needs more than a few)."""
MAX_INT = 2**63 - 1
"""Integers beyond a signed 64-bit range are refused (numpy columns, Go-like pool numbers)."""
MAX_AMOUNT = 1e15
"""The largest size or amount (cpus, memory, gpus, storage, pool kinds, machine memory...)."""
MAX_EXPANDED = 100_000
"""The most resources one file may describe once ``count`` is expanded (hosts + vaults,
machines, nodes), and the most tables of one kind."""
MAX_TEXT = 10_000
"""The longest string value a file may hold (names, MIL constraints, select strings)."""


def load_toml(path: str | Path) -> dict[str, Any]:
    """Read a TOML file.  A missing or unreadable file, a syntax error, a file
    too large or nested too deep, a number TOML cannot hold, is a ConfigError;
    a syntax error shows the line with a caret under the column."""
    p = Path(path)
    try:
        if p.is_file() and p.stat().st_size > MAX_FILE_BYTES:
            raise ConfigError(f"file larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB", file=str(p))
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("no such file", file=str(p)) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"cannot read: {exc}", file=str(p)) from None
    return loads_toml(text, file=str(p))


def loads_toml(text: str, *, file: str = "<memory>") -> dict[str, Any]:
    """Parse TOML ``text`` (see :func:`load_toml`); every failure is a ConfigError."""
    if len(text) > MAX_FILE_BYTES:
        raise ConfigError(f"file larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB", file=file)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"not valid TOML: {exc}{_toml_caret(text, str(exc))}", file=file) from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise _too_deep_error(text, file) from None
    except (ValueError, OverflowError) as exc:  # a 5,000-digit integer: int() refuses it
        raise ConfigError(f"not valid TOML: a value TOML cannot hold ({_short(exc)})", file=file) from None
    if _depth(doc) > MAX_DEPTH:
        raise _too_deep_error(text, file)
    return doc


_TOKEN = re.compile(
    r'"""(?:[^"\\]|\\.|"(?!""))*"""|\'\'\'.*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*|[\[\]{}]',
    re.S,
)


def _too_deep_error(text: str, file: str) -> ConfigError:
    """"Nested too deeply", with a caret under the bracket that went past :data:`MAX_DEPTH` when it can be found."""
    depth = 0
    for m in _TOKEN.finditer(text):
        tok = m.group()
        if tok in ("[", "{"):
            depth += 1
            if depth > MAX_DEPTH:
                line = text.count("\n", 0, m.start()) + 1
                column = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
                return ConfigError(f"nested deeper than {MAX_DEPTH} levels\n{caret_at(text, line, column)}", file=file)
        elif tok in ("]", "}"):
            depth = max(depth - 1, 0)
    return ConfigError(f"nested deeper than {MAX_DEPTH} levels", file=file)


def _depth(doc: Any) -> int:
    """How deep tables and arrays nest in a parsed document (iteratively: no recursion)."""
    deepest = 0
    stack = [(doc, 0)]
    while stack:
        value, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            break
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
    return deepest


def _short(exc: BaseException, n: int = 120) -> str:
    text = str(exc)
    return text if len(text) <= n else text[: n - 3] + "..."


def _toml_caret(text: str, message: str) -> str:
    """The source line and a caret for tomllib's "(at line L, column C)", or ""."""
    m = re.search(r"\(at line (\d+), column (\d+)\)", message)
    if m is None:
        return ""
    return "\n" + caret_at(text, int(m.group(1)), int(m.group(2)))


def tables(doc: dict[str, Any], name: str, file: str) -> list[dict[str, Any]]:
    """The array of tables ``[[name]]`` (empty when absent)."""
    value = doc.get(name, [])
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
        raise ConfigError(f"must be an array of tables [[{name}]]", file=file, table=name)
    return table_count(value, name, file=file)


def check_keys(table: dict[str, Any], allowed: Iterable[str], *, file: str, where: str) -> None:
    """Refuse keys a table does not know (a typo must not pass silently).  ``allowed`` a frozenset is
    used as it is (a hot caller builds it once)."""
    if not isinstance(allowed, frozenset):
        allowed = frozenset(allowed)
    if allowed.issuperset(table):
        return
    for key in table:
        if key not in allowed:
            raise ConfigError(
                f"unknown key (known: {', '.join(sorted(allowed))})", file=file, table=where, key=key
            )


def require(table: dict[str, Any], key: str, typ: type | tuple[type, ...], *, file: str, where: str) -> Any:
    """A key that must be present with the given type."""
    if key not in table:
        raise ConfigError("is required", file=file, table=where, key=key)
    return expect(table, key, typ, None, file=file, where=where)


def expect(
    table: dict[str, Any], key: str, typ: type | tuple[type, ...], default: Any, *, file: str, where: str
) -> Any:
    """An optional key with a type; ints are accepted where floats are asked.

    A boolean is never a number; a float must be finite (no nan, no inf); an
    integer must fit 64 bits (and a float's range where a float is asked); a
    string is at most :data:`MAX_TEXT` characters."""
    if key not in table:
        return default
    value = table[key]
    kind = type(value)
    if kind is typ:  # exactly the type asked (most values): the checks below, in short
        if kind is str:
            if len(value) <= MAX_TEXT:
                return value
        elif kind is float:
            if math.isfinite(value):
                return value
        elif kind is int:
            if -MAX_INT <= value <= MAX_INT:
                return value
        elif kind is bool or kind is list or kind is dict:
            return value
    elif kind is int and typ is float and -MAX_INT <= value <= MAX_INT:
        return float(value)
    types = typ if isinstance(typ, tuple) else (typ,)
    if isinstance(value, int) and not isinstance(value, bool) and (int in types or float in types):
        if abs(value) > MAX_INT:
            raise ConfigError(f"number out of range (at most {MAX_INT} in size)", file=file, table=where, key=key)
        if int not in types:
            return float(value)
    if isinstance(value, bool) and bool not in types:
        ok = False
    else:
        ok = isinstance(value, types)
    if not ok:
        names = " or ".join(t.__name__ for t in types)
        raise ConfigError(f"must be {names}, not {type(value).__name__} {_shown(value)}", file=file, table=where, key=key)
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"must be a finite number, not {value!r}", file=file, table=where, key=key)
    if isinstance(value, str) and len(value) > MAX_TEXT:
        raise ConfigError(f"longer than {MAX_TEXT} characters", file=file, table=where, key=key)
    return value


def _shown(value: Any, n: int = 60) -> str:
    """``repr(value)`` cut short (a 10,000-element list is not a message)."""
    try:
        text = repr(value)
    except (ValueError, RecursionError):  # an int too long to print, a structure too deep
        text = f"<{type(value).__name__}>"
    return text if len(text) <= n else text[: n - 3] + "..."


def bounded(
    table: dict[str, Any], key: str, typ: type | tuple[type, ...], default: Any, *, file: str, where: str,
    lo: float | None = None, hi: float | None = None, lo_open: bool = False,
) -> Any:
    """:func:`expect` a number, then refuse it below ``lo`` (or at it, with
    ``lo_open``) or above ``hi``, naming the bound."""
    v = expect(table, key, typ, default, file=file, where=where)
    if v is None or isinstance(v, bool):
        return v
    if lo is not None and (v < lo or (lo_open and v == lo)):
        raise ConfigError(f"must be {'> ' if lo_open else 'at least '}{lo:g}, not {v!r}", file=file, table=where, key=key)
    if hi is not None and v > hi:
        raise ConfigError(f"must be at most {hi:g}, not {v!r}", file=file, table=where, key=key)
    return v


def table_count(items: list[Any], name: str, *, file: str, limit: int = MAX_EXPANDED) -> list[Any]:
    """``items`` (the tables of ``[[name]]``) when there are at most ``limit``."""
    if len(items) > limit:
        raise ConfigError(f"more than {limit} [[{name}]] tables", file=file, table=name)
    return items


def model(cls: type, values: dict[str, Any], *, file: str, where: str) -> Any:
    """``cls(**values)``; a pydantic ValidationError (or a TypeError or
    ValueError from a validator) becomes a ConfigError naming file, table and
    the key at fault."""
    try:
        return cls(**values)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(map(str, err.get("loc", ())))
        raise ConfigError(str(err.get("msg", exc)), file=file, table=where, key=loc) from None
    except (TypeError, ValueError, OverflowError) as exc:
        raise ConfigError(_short(exc), file=file, table=where) from None


def reraise(exc: ConfigError, *, file: str, table: str, key: str) -> ConfigError:
    """A ConfigError raised without a place (a builder's), placed in ``file`` at ``table.key``."""
    msg = str(exc)
    where = ": ".join(p for p in (exc.file, exc.table + (f".{exc.key}" if exc.key and exc.table else exc.key)) if p)
    if where and msg.startswith(where + ": "):
        msg = msg[len(where) + 2:]
    return ConfigError(msg, file=file, table=table, key=exc.key or key)


def expand_names(name: str, count: int | None) -> list[str]:
    """``count`` expands ``name`` to ``name1 … nameN``; no count is the name alone.
    Callers bound ``count`` first (:func:`count_of`); this refuses past :data:`MAX_EXPANDED`."""
    if count is None:
        return [name]
    if count > MAX_EXPANDED:
        raise ConfigError(f"count {count} is more than {MAX_EXPANDED}")
    return [f"{name}{i}" for i in range(1, count + 1)]


def count_of(table: dict[str, Any], *, file: str, where: str, limit: int = MAX_EXPANDED) -> int | None:
    """The optional ``count`` of a ``[[host]]``-like table: an integer from 1 to ``limit``."""
    return bounded(table, "count", int, None, file=file, where=where, lo=1, hi=limit)


class Budget:
    """How many resources a file has described so far, against one limit
    (``count`` expansions add up across tables)."""

    def __init__(self, what: str, *, file: str, limit: int = MAX_EXPANDED) -> None:
        self.what, self.file, self.limit, self.used = what, file, limit, 0

    def take(self, n: int, *, where: str) -> None:
        self.used += n
        if self.used > self.limit:
            raise ConfigError(f"the file describes more than {self.limit} {self.what}", file=self.file, table=where,
                              key="count")


def kind_amounts(t: dict[str, Any], *, file: str, where: str) -> dict[str, float]:
    """A table's ``resources``: custom resource kinds (names of letters, digits
    and _, not a built-in) to amounts from 0 to MAX_AMOUNT (a boolean is not one)."""
    kinds = expect(t, "resources", dict, {}, file=file, where=where)
    for key, v in kinds.items():
        if not re.fullmatch(KIND_NAME, str(key)) or key in BUILTIN_KINDS:
            raise ConfigError("a custom resource kind is a name of letters, digits and _ (not first), not cpus, "
                              "memory_gb, gpus or storage_gb", file=file, table=f"{where}.resources", key=str(key))
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= MAX_AMOUNT:
            raise ConfigError(f"must be a number from 0 to {MAX_AMOUNT:g}", file=file, table=f"{where}.resources",
                              key=str(key))
    return {str(k): float(v) for k, v in kinds.items()}
