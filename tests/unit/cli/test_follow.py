"""``legionrm show ID --follow``: one line per status change, until the
request ends, the timeout passes or Ctrl-C, never a traceback."""

from __future__ import annotations

import io
import json

import pytest

from legionrm.cli import build_parser
from legionrm.cli.front import STATUS_WIDTH, follow_events
from legionrm.events.triggers import STATUSES
from legionrm.models import StatusEvent


def ev(seq: int, status: str, obj: str | None = None) -> dict:
    """A status event as the gateway sends it: a ``StatusEvent`` document."""
    return StatusEvent(seq=seq, at=0.0, request_id="r1", user="alice", status=status, object_id=obj,  # type: ignore[arg-type]
                       reason=f"why {seq}").model_dump(mode="json")


STORY = [ev(1, "pending"), ev(2, "reserved"), ev(3, "started", "i1"), ev(4, "started"), ev(5, "ended", "i1"),
         ev(6, "ended"), ev(7, "pending")]


class Feed:
    """Gives the story a few events per poll, from the cursor asked for."""

    def __init__(self, events: list[dict], per_poll: int = 2, interrupt_at: int | None = None) -> None:
        self.events, self.per_poll, self.interrupt_at = events, per_poll, interrupt_at
        self.polls = 0
        self.cursors: list[int] = []

    def __call__(self, cursor: int) -> list[dict]:
        self.polls += 1
        self.cursors.append(cursor)
        if self.interrupt_at is not None and self.polls >= self.interrupt_at:
            raise KeyboardInterrupt
        return [e for e in self.events if e["seq"] > cursor][: self.per_poll]


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.t += s


@pytest.mark.parametrize("events, timeout, interrupt, code, lines", [
    pytest.param(STORY, None, None, 0, 6, id="until-the-request-ends-not-its-instance"),
    pytest.param(STORY[:3], 5.0, None, 0, 3, id="timeout"),
    pytest.param(STORY, None, 2, 130, 2, id="ctrl-c"),
    pytest.param([ev(1, "pending"), ev(2, "failed")], None, None, 0, 2, id="failed"),
])
def test_follow_prints_one_line_per_change_and_stops_cleanly(events, timeout, interrupt, code, lines) -> None:
    out, clock = io.StringIO(), Clock()
    feed = Feed(events, interrupt_at=interrupt)
    assert follow_events(feed, timeout, out=out, sleep=clock.sleep, clock=clock) == code
    printed = out.getvalue().splitlines()
    assert len(printed) == lines
    assert [c for c in feed.cursors] == sorted(feed.cursors)  # the cursor only moves on
    assert printed[0].split()[1:3] == ["pending", "r1:"] and printed[0].endswith("why 1")


def test_follow_as_json_gives_one_object_per_line() -> None:
    out, clock = io.StringIO(), Clock()
    follow_events(Feed(STORY), None, as_json=True, out=out, sleep=clock.sleep, clock=clock)
    assert [json.loads(line)["status"] for line in out.getvalue().splitlines()] == [
        "pending", "reserved", "started", "started", "ended", "ended"]


def test_follow_stops_on_a_request_that_ended_without_its_events() -> None:
    out, clock = io.StringIO(), Clock()
    assert follow_events(Feed([]), None, ended=lambda: True, out=out, sleep=clock.sleep, clock=clock) == 0
    assert out.getvalue() == ""


def test_the_status_column_fits_the_longest_status() -> None:
    assert STATUS_WIDTH == max(map(len, STATUSES))


def test_show_takes_follow_and_timeout() -> None:
    args = build_parser().parse_args(["show", "r1", "--follow", "--timeout", "30"])
    assert (args.follow, args.timeout) == (True, 30.0)
