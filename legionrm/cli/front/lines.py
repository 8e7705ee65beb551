"""How the user verbs print the gateway's documents: a request's fields and times, the plain
table every listing uses, how a request ended and what it exits with."""

from __future__ import annotations

from legionrm.client.wire import Doc

TYPE_CHECKING = False  # typing's, without importing typing: a CLI call never loads it
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any


def age(t: float, now: float) -> str:
    """How long from ``t`` to ``now``, short: ``42s``, ``5m``, ``2.5h`` (never negative)."""
    s = max(0.0, now - t)
    return f"{s:.0f}s" if s < 120 else f"{s / 60:.0f}m" if s < 7200 else f"{s / 3600:.1f}h"


def starts(info: Doc, now: float) -> str:
    """When a request (a ``RequestInfo`` document) asked to start: ``in 59m`` ahead, ``2m ago``
    after, ``-`` for as soon as possible."""
    start = info.get("start")
    if start is None:
        return "-"
    return f"in {age(now, start)}" if start > now else f"{age(start, now)} ago"


def exit_status(info: Doc) -> int:
    """What ``wait`` and ``submit --wait`` exit with: the work's exit code (``128 + signal`` for a run
    a signal ended, at most 255); a request that ended without one (it ran no command) exits 0 when
    completed, 1 otherwise."""
    if info.get("exit_code") is not None:
        return max(0, min(255, info["exit_code"]))
    return 0 if info["state"] == "completed" else 1


def request_json(info: Doc) -> dict[str, Any]:
    """One request (a ``RequestInfo`` document) as ``legionrm list --json`` prints it (times in
    seconds since the epoch)."""
    return {
        "id": info["id"], "user": info["user"], "state": info["state"], "reason": info.get("reason", ""),
        "classes": list(info.get("classes", ())), "count": info.get("count", 0), "pool": info.get("pool", "/"),
        "instances": [{"id": i["id"], "host": i["host"], "state": i["state"],
                       "exit_code": (i.get("result") or {}).get("exit_code")} for i in info.get("instances", ())],
        "submitted": info.get("submitted", 0.0), "earliest_start": info.get("earliest_start"),
        "start": info.get("start"), "exit_code": info.get("exit_code"), "qos": info.get("qos"),
        "hold": info.get("hold"),
    }


def columns(headers: tuple[str, ...], rows: Iterable[Iterable[Any]], right: tuple[str, ...] = ()) -> str:
    """A plain table: a header row, two spaces between columns, ``right`` columns right-aligned."""
    cells = [list(headers)] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    out = []
    for row in cells:
        parts = [c.rjust(w) if h in right else c.ljust(w) for c, w, h in zip(row, widths, headers)]
        out.append("  ".join(parts).rstrip())
    return "\n".join(out)


def request_rows(infos: list[Doc], now: float) -> str:
    """``legionrm list``'s table of ``RequestInfo`` documents."""
    rows = [(d["id"], d["state"], "-" if d["exit_code"] is None else d["exit_code"], d["user"], ",".join(d["classes"]),
             d["count"], ",".join(sorted({x["host"] for x in d["instances"] if x["state"] == "running"})) or "-",
             age(d["submitted"], now), starts(d, now), d["reason"] or "-") for d in map(request_json, infos)]
    return columns(("id", "state", "exit", "user", "class", "count", "where", "age", "start", "reason"), rows,
                   right=("exit", "count", "age"))


def ended_line(info: Doc) -> str:
    """``ID: STATE (reason); exit code N``: how ``wait`` and ``submit --wait`` say a request ended."""
    return (f"{info['id']}: {info['state']}" + (f" ({info['reason']})" if info.get("reason") else "")
            + (f"; exit code {info['exit_code']}" if info.get("exit_code") is not None else ""))


def num(v: float | None, fmt: str = "g") -> str:
    """A number in ``fmt``, or ``-`` for None."""
    return "-" if v is None else format(v, fmt)
