"""The gateway keeps legionrm's gauges from the dashboard's view: what went away is set to 0,
a queue wait is recorded once."""

from __future__ import annotations

from typing import Any

import pytest

from legionrm import metrics
from legionrm.gateway.dashboard.view import WAITING


@pytest.fixture
def seen(monkeypatch) -> dict[str, list[Any]]:
    got: dict[str, list[Any]] = {"pending": [], "processes": [], "waits": []}
    monkeypatch.setattr(metrics, "set_pending", lambda d: got["pending"].append(dict(d)))
    monkeypatch.setattr(metrics, "set_processes", lambda rows: got["processes"].append(list(rows)))
    monkeypatch.setattr(metrics, "set_pools", lambda rows: None)
    monkeypatch.setattr(metrics, "set_host_load", lambda rows: None)
    monkeypatch.setattr(metrics, "record_queue_wait", lambda pool, s: got["waits"].append((pool, s)))
    return got


def view(pending: list[dict[str, Any]], running: list[dict[str, Any]], shares: list[dict[str, Any]]) -> dict[str, Any]:
    return {"pools": [{"pool": "/"}], "pending": pending, "running": running, "ended": [], "shares": shares,
            "hosts": []}


def test_gone_pools_and_users_go_to_zero_and_waits_are_recorded_once(seen) -> None:
    g = metrics.ViewGauges(WAITING)
    g.record(view([{"id": "a", "pool": "/research", "state": "pending"}],
                  [{"id": "b", "pool": "/", "wait_s": 1.5}], [{"user": "ann", "class": "normal", "processes": 2}]))
    g.record(view([], [{"id": "b", "pool": "/", "wait_s": 1.5}], []))
    assert seen["pending"] == [{"/": 0, "/research": 1}, {"/": 0, "/research": 0}]
    assert seen["processes"][-1] == [{"user": "ann", "class": "normal", "processes": 0}]
    assert seen["waits"] == [("/", 1.5)]
