"""``status`` and the dashboard show every scheduler's queue, as ``legionrm schedulers`` does:
a system of two schedulers (the in-process one as ``default``, a fake ``gpu`` one beside it)."""

from __future__ import annotations

import json
from collections.abc import Awaitable
from typing import Any, Iterator

import httpx
import pytest

from legionrm.cli import main
from legionrm.errors import SchedulingError
from legionrm.models import RequestInfo, SchedulerSpec, SchedulerStatus
from legionrm.scheduler.several import Roster

from .conftest import ADMIN, DASH_KEY, WORKER, Gateway, serve


class TwoSchedulers:
    """The in-process plane, and a second scheduler ``gpu`` that holds one pending request
    and runs one; ``down`` makes it stop answering."""

    def __init__(self, plane: Any) -> None:
        self.plane, self.down = plane, False

    def roster(self) -> Roster:
        return Roster((SchedulerSpec(name="default"), SchedulerSpec(name="gpu", nodepools=("gpu",))))

    async def call(self, user: str, target: str, method: str, args: dict[str, Any]) -> Any:
        if target != "scheduler:gpu":
            return await self.plane.call(user, target, method, args)
        if self.down:
            raise SchedulingError("scheduler gpu did not answer")
        if method == "status":
            return SchedulerStatus(instances=1, requests={"pending": 1, "running": 1})
        if method == "list_requests":
            return [RequestInfo(id="g-1", user="ann", state="pending", classes=("Worker",), count=1, submitted=1.0)]
        raise SchedulingError(f"no request in scheduler gpu ({method})")

    def start(self, user: str, target: str, method: str, args: dict[str, Any]) -> Awaitable[Any]:
        return self.call(user, target, method, args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.plane, name)


@pytest.fixture
def two(tmp_path) -> Iterator[tuple[Gateway, TwoSchedulers]]:
    made: list[TwoSchedulers] = []
    it = serve(tmp_path, wrap=lambda p: made.append(TwoSchedulers(p)) or made[0],
               dashboard_user=ADMIN, dashboard_key=DASH_KEY)
    yield next(it), made[0]
    for _ in it:
        pass


def test_status_lists_every_scheduler_with_its_queue_in_one_table(two, capsys) -> None:
    gw, _ = two
    gw.client("ann").submit(WORKER)
    creds = ["--credentials", str(gw.admin_path)]
    assert main(["status", *creds]) == 0
    out = capsys.readouterr().out.splitlines()
    head = next(i for i, line in enumerate(out) if line.startswith("name ") and "pending" in line)
    table = {line.split()[0]: line.split() for line in out[head + 1:head + 3]}
    assert set(table) == {"default", "gpu"}, out
    assert table["default"][-3:] == ["0", "1", "1"] and table["gpu"][-3:] == ["1", "1", "1"], out
    assert main(["status", "--json", *creds]) == 0
    rows = json.loads(capsys.readouterr().out)["schedulers"]
    assert [(r["name"], r["default"], r["requests"].get("pending", 0)) for r in rows] == [
        ("default", True, 0), ("gpu", False, 1)]


def test_status_says_which_scheduler_did_not_answer(two, capsys) -> None:
    gw, plane = two
    plane.down = True
    assert main(["status", "--credentials", str(gw.admin_path)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("gpu "))
    assert "did not answer" in line


def test_the_dashboard_shows_every_scheduler_and_all_their_requests(two) -> None:
    gw, _ = two
    gw.client("ann").submit(WORKER)
    view = httpx.get(gw.url + "/api/state", params={"key": DASH_KEY}).json()
    assert [(s["name"], s["pending"], s["running"], s["instances"]) for s in view["schedulers"]] == [
        ("default", 0, 1, 1), ("gpu", 1, 1, 1)]
    assert "g-1" in {r["id"] for r in view["pending"]}  # the second scheduler's queue, on the page too
    assert view["summary"]["instances"] == 2
