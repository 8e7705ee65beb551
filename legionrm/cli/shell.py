"""Operators' view of the Collection: ``legionrm query`` and ``legionrm shell``.

The shell's logic is :class:`ShellSession`, a plain object that takes one
line and returns text, so it is tested without a terminal; the
prompt_toolkit loop around it only adds history and completion.  Both work
offline on a cluster file (``--cluster``) or against a running system.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, Iterable, Protocol

from rich.table import Table

from legionrm.cli.errors import describe
from legionrm.cli.output import natural_width, width
from legionrm.cli.output import render as render_plain
from legionrm.cli.output import table as house_table
from legionrm.client.client import Client
from legionrm.collection.collection import Collection
from legionrm.config import load_cluster
from legionrm.errors import UnknownResourceError
from legionrm.mil import FUNCTIONS, KEYWORDS, compile_query
from legionrm.models import (
    AttrValue,
    ClusterSpec,
    Identity,
    QueryResult,
    ResourceRecord,
)

# The word being typed at the cursor: a \command, a $attribute (possibly just
# "$") or a bare word (keyword or function), wherever it starts -- after "(",
# an operator or nothing at all.
_WORD_AT_CURSOR = re.compile(r"(\\[A-Za-z]*|\$[A-Za-z0-9_]*|[A-Za-z_][A-Za-z0-9_]*)$")
_COMMANDS = ["\\attrs", "\\explain", "\\as", "\\all", "\\help", "\\quit"]

# Columns shown first in a result table, when resources export them.
_PREFERRED = ("kind", "nodepool", "arch", "os", "cpus", "memory_gb", "gpus", "storage_gb", "site")
_MAX_COLUMNS = 9
_NUMERIC = {"cpus", "memory_gb", "gpus", "storage_gb", "free_cpus", "free_memory_gb", "instances", "load"}


class Backend(Protocol):
    """What the query tools need of a Collection, local or remote."""

    def query(self, text: str, caller: Identity | None = None, include_unavailable: bool = False) -> QueryResult: ...

    def record(self, name: str) -> ResourceRecord: ...

    def attribute_names(self) -> list[str]: ...


class LocalBackend:
    """A Collection core built in this process from a cluster description."""

    def __init__(self, spec: ClusterSpec) -> None:
        self.collection = Collection(
            heartbeat_interval_s=spec.collection.heartbeat_interval_s, stale_after=spec.collection.stale_after
        )
        for rec in spec.records():
            self.collection.join(rec)

    def query(self, text: str, caller: Identity | None = None, include_unavailable: bool = False) -> QueryResult:
        return self.collection.query(text, caller, include_unavailable)

    def record(self, name: str) -> ResourceRecord:
        return self.collection.record(name)

    def attribute_names(self) -> list[str]:
        return self.collection.snapshot().attribute_names()


class GatewayBackend:
    """The running system's Collection through the gateway, as the credentials' user
    (or, for an administrator, ``as_user``): only the resources they may use."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def query(self, text: str, caller: Identity | None = None, include_unavailable: bool = False) -> QueryResult:
        compile_query(text)  # a bad query is said here, with its caret, before any call
        return self.client.query(text, include_unavailable)

    def record(self, name: str) -> ResourceRecord:
        for r in self.client.query("true", include_unavailable=True).records:
            if r.name == name:
                return r
        raise UnknownResourceError(f"no resource {name!r} you may see")

    def attribute_names(self) -> list[str]:
        return sorted({k for r in self.client.query("true", include_unavailable=True).records for k in r.attributes})


def open_backend(cluster: str | None, credentials: str | None = None, as_user: str | None = None) -> Backend:
    """Offline on ``cluster`` when given, else the running system's Collection through the gateway."""
    if cluster is not None:
        return LocalBackend(load_cluster(cluster))
    return GatewayBackend(Client.from_credentials(credentials, as_user=as_user))


# --- rendering ---------------------------------------------------------------


def result_json(result: QueryResult) -> str:
    """The machine-readable answer: a list of {name, kind, attributes}."""
    return json.dumps(
        [{"name": r.name, "kind": r.kind, "available": r.available, "attributes": r.attributes} for r in result.records],
        indent=2,
        sort_keys=True,
    )


def result_table(result: QueryResult) -> Table | str:
    """The matches as a table in the house style (a plain line when nothing matches)."""
    if not result.records:
        return f"0 of {result.considered} resources match  ({result.elapsed_ms:.2f} ms)"
    attrs = {k for r in result.records for k in r.attributes} - {"name"}
    cols = [c for c in _PREFERRED if c in attrs] + sorted(attrs - set(_PREFERRED))
    cols = cols[:_MAX_COLUMNS]
    limit = width()
    while True:  # as many columns as fit the terminal, whole (piped: all of them)
        table = house_table(f"{len(result.records)} of {result.considered} resources match  "
                            f"({result.elapsed_ms:.2f} ms)", ["name", *cols], right=[c for c in cols if c in _NUMERIC])
        for r in result.records:
            table.add_row(r.name + ("" if r.available else " (unavailable)"), *(_fmt(r.attributes.get(c)) for c in cols))
        if limit is None or not cols or natural_width(table) <= limit:
            return table
        cols = cols[:-1]


def _fmt(v: AttrValue | None) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def render(obj: Any) -> str:
    """A table or text as plain text, fit to the terminal (piped: as wide as it needs)."""
    return render_plain(obj)


# --- the shell ---------------------------------------------------------------

HELP = """\
Type a MIL expression to list the resources it matches, e.g.
  $cpus >= 16 and $arch == "x86_64"
Commands:
  \\attrs                 list the attributes resources export
  \\explain NAME EXPR     show clause by clause why NAME does or does not match
  \\as USER [CLASS]       query as this caller (only resources that accept them)
  \\as                    query as nobody in particular again
  \\all                   toggle showing unavailable resources
  \\help                  this text
  \\quit                  leave (Ctrl-D works too)"""


class ShellSession:
    """One interactive session: ``handle(line)`` returns the text to show.

    Not idempotent (``\\as`` and ``\\all`` change the session); never raises
    for bad input: a MIL error comes back as its caret message.
    """

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.caller: Identity | None = None
        self.include_unavailable = False
        self.done = False
        self._attrs: list[str] | None = None  # cached for completion; dropped after each line

    def completions(self) -> list[str]:
        """Words the shell completes: $attributes, keywords, functions, commands."""
        attrs = [f"${a}" for a in self._attribute_names()]
        return attrs + list(KEYWORDS) + [f"{f}(" for f in FUNCTIONS] + list(_COMMANDS)

    def complete(self, before_cursor: str) -> tuple[str, list[str]]:
        """(the word being typed, its completions) for the text before the cursor.

        The word may start anywhere (``max($cp`` completes ``$cp``); a
        ``\\command`` completes only at the start of the line, a bare word to
        keywords and functions, ``$...`` to the attributes resources export
        now (asked of the backend at most once per line typed).
        """
        m = _WORD_AT_CURSOR.search(before_cursor)
        if m is None:
            return "", []
        word = m.group(1)
        if word.startswith("\\"):
            pool = _COMMANDS if not before_cursor[: m.start()].strip() else []
        elif word.startswith("$"):
            pool = [f"${a}" for a in self._attribute_names()]
        else:
            pool = list(KEYWORDS) + [f"{f}(" for f in FUNCTIONS]
        return word, [w for w in pool if w.startswith(word) and w != word]

    def _attribute_names(self) -> list[str]:
        if self._attrs is None:
            self._attrs = self.backend.attribute_names()
        return self._attrs

    def handle(self, line: str) -> str:
        self._attrs = None  # resources may have exported new attributes since
        line = line.strip()
        if not line or line.startswith("#"):
            return ""
        try:
            if line.startswith("\\"):
                return self._command(line)
            return render(result_table(self.backend.query(line, self.caller, self.include_unavailable)))
        except Exception as exc:  # noqa: BLE001 -- a LegionError, or one an actor raised (unwrapped)
            failure = describe(exc)
            if failure is None:
                raise
            return f"error: {failure.message}"

    def _command(self, line: str) -> str:
        cmd, _, rest = line.partition(" ")
        rest = rest.strip()
        if cmd in ("\\q", "\\quit", "\\exit"):
            self.done = True
            return ""
        if cmd in ("\\h", "\\help", "\\?"):
            return HELP
        if cmd == "\\attrs":
            return "\n".join(self.backend.attribute_names())
        if cmd == "\\all":
            self.include_unavailable = not self.include_unavailable
            return f"unavailable resources {'shown' if self.include_unavailable else 'hidden'}"
        if cmd == "\\as":
            parts = rest.split()
            if not parts:
                self.caller = None
                return "querying as nobody in particular"
            self.caller = Identity(user=parts[0], class_name=parts[1] if len(parts) > 1 else None)
            return f"querying as user {self.caller.user}" + (f", class {self.caller.class_name}" if self.caller.class_name else "")
        if cmd == "\\explain":
            name, _, expr = rest.partition(" ")
            if not name or not expr.strip():
                return "usage: \\explain NAME EXPR"
            return self.explain(name, expr.strip())
        return f"unknown command {cmd!r}; \\help lists the commands"

    def explain(self, name: str, expr: str) -> str:
        """Clause by clause, why resource ``name`` does or does not match ``expr``."""
        query = compile_query(expr)
        rec = self.backend.record(name)
        lines = [f"{name}: {'MATCHES' if query.matches(rec.attributes) else 'does not match'}  {expr}"]
        for clause in query.explain(rec.attributes):
            lines.append(clause.render())
        if not rec.available:
            lines.append(f"note: {name} is unavailable (varied off or heartbeats stopped) and is left out of queries")
        if self.caller is not None:
            ok = name in self.backend.query(f'$name == {json.dumps(name)}', self.caller, True).names
            if not ok:
                lines.append(f"note: {name} does not accept user {self.caller.user!r}; a query as them leaves it out")
        return "\n".join(lines)


def run_lines(session: ShellSession, lines: Iterable[str], out=sys.stdout) -> None:
    """Feed lines (a script, or piped stdin) through a session."""
    for line in lines:
        text = session.handle(line)
        if text:
            print(text, file=out)
        if session.done:
            break


def interactive(session: ShellSession) -> None:
    """The prompt_toolkit loop: history in ~/.legionrm_history, completion."""
    # lazily, on purpose: only the interactive shell needs a terminal library
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import Completer, Completion
    from prompt_toolkit.history import FileHistory

    class _Completer(Completer):  # the logic is ShellSession.complete (tested without a terminal)
        def get_completions(self, document, complete_event):  # type: ignore[no-untyped-def]
            word, words = session.complete(document.text_before_cursor)
            for w in words:
                yield Completion(w, start_position=-len(word))

    completer = _Completer()
    prompt = PromptSession(history=FileHistory(str(Path.home() / ".legionrm_history")), completer=completer)
    print("legionrm shell: a MIL expression per line; \\help for commands")
    while not session.done:
        try:
            line = prompt.prompt("mil> ")
        except KeyboardInterrupt:
            continue
        except EOFError:
            break
        text = session.handle(line)
        if text:
            print(text)


# --- CLI entry points ----------------------------------------------------------


def cli_query(args: argparse.Namespace) -> int:
    """`legionrm query EXPR`: exit 0 with the answer, 2 on a bad query or file."""
    compile_query(args.expr)  # a bad query fails before any system is contacted
    backend = open_backend(args.cluster, getattr(args, "credentials", None), getattr(args, "as_user", None))
    who = getattr(args, "as_user", None)
    caller = Identity(user=who or "", class_name=args.class_name) if (who or args.class_name) else None
    result = backend.query(args.expr, caller, args.all)
    print(result_json(result) if args.json else render(result_table(result)))
    return 0


def cli_shell(args: argparse.Namespace) -> int:
    session = ShellSession(open_backend(args.cluster, getattr(args, "credentials", None), getattr(args, "as_user", None)))
    if sys.stdin.isatty():
        interactive(session)
    else:
        run_lines(session, sys.stdin)
    return 0
