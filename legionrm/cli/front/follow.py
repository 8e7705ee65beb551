"""``show --follow``: each status change of a request as one line, until it ends."""

from __future__ import annotations

import json
import sys
import time

from legionrm.client.wire import Doc

TYPE_CHECKING = False  # typing's, without importing typing: a CLI call never loads it
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


STATUS_WIDTH = 11
"""The status column's width: the longest status a trigger may fire (``deactivated``; a test holds
it equal to the longest of :data:`legionrm.events.triggers.STATUSES`)."""
ENDING = frozenset({"ended", "failed", "cancelled"})
"""The request-level statuses after which there is nothing more to follow."""


def event_line(e: Doc) -> str:
    """One status change (a ``StatusEvent`` document) as ``show --follow`` prints it."""
    when = time.strftime("%H:%M:%S", time.localtime(e["at"]))
    what = f"{e['request_id']}" + (f" {e['object_id']}" if e.get("object_id") else "")
    return f"{when}  {e['status']:<{STATUS_WIDTH}} {what}" + (f": {e['reason']}" if e.get("reason") else "")


def follow_events(fetch: Callable[[int], list[Doc]], timeout_s: float | None, *, as_json: bool = False,
                  ended: Callable[[], bool] = lambda: False, out: Any = None, poll_s: float = 0.5,
                  sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> int:
    """Print each event ``fetch(cursor)`` gives (``StatusEvent`` documents, every one after
    ``cursor``) as one line, until the request's own event says it ended (0), or a poll
    brings nothing and ``ended()`` says it has ended anyway (0: its events
    were not kept, e.g. the Scheduler restarted), or ``timeout_s`` passes (0,
    with a note on stderr), or Ctrl-C (130, no traceback)."""
    out = out or sys.stdout
    deadline = None if timeout_s is None else clock() + timeout_s
    cursor = 0
    try:
        while True:
            events = fetch(cursor)
            for e in events:
                cursor = max(cursor, e["seq"])
                print(json.dumps(e) if as_json else event_line(e), file=out, flush=True)
                if e.get("object_id") is None and e["status"] in ENDING:
                    return 0
            if not events and ended():
                return 0
            if deadline is not None and clock() >= deadline:
                print(f"stopped following after {timeout_s:g} s", file=sys.stderr)
                return 0
            sleep(poll_s)
    except KeyboardInterrupt:
        print("stopped following", file=sys.stderr)
        return 130
