"""TOML files read with a caret on syntax errors, and the small checks every
file loader shares (cluster, request, simulate, place and pools files).

Every problem is a :class:`ConfigError` naming the file, the table (with its
index, ``host[3]``) and the key, so a person can go straight to the line.
Imports nothing of legionrm but :mod:`legionrm.errors`.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, Iterable

from legionrm.errors import ConfigError, caret_at


def load_toml(path: str | Path) -> dict[str, Any]:
    """Read a TOML file.  A missing or unreadable file, or a syntax error, is a
    ConfigError; a syntax error shows the line with a caret under the column."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("no such file", file=str(p)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read: {exc}", file=str(p)) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"not valid TOML: {exc}{_toml_caret(text, str(exc))}", file=str(p)) from None


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
    return value


def check_keys(table: dict[str, Any], allowed: Iterable[str], *, file: str, where: str) -> None:
    """Refuse keys a table does not know (a typo must not pass silently)."""
    allowed = set(allowed)
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
    """An optional key with a type; ints are accepted where floats are asked."""
    if key not in table:
        return default
    value = table[key]
    types = typ if isinstance(typ, tuple) else (typ,)
    if float in types and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, bool) and bool not in types:
        ok = False
    else:
        ok = isinstance(value, types)
    if not ok:
        names = " or ".join(t.__name__ for t in types)
        raise ConfigError(f"must be {names}, not {type(value).__name__} {value!r}", file=file, table=where, key=key)
    return value


def expand_names(name: str, count: int | None) -> list[str]:
    """``count`` expands ``name`` to ``name1 … nameN``; no count is the name alone."""
    if count is None:
        return [name]
    return [f"{name}{i}" for i in range(1, count + 1)]
