"""The dashboard in a real headless browser (Chromium from the system's
packages): against a system booted on the session cluster, the page loads,
shows every host of the running system with its state, and, without a
reload, shows a request after it is submitted and the hosts it runs on.  The
API answers JSON with no errors; a dead Scheduler shows as one line on the
page, not a traceback.  Skipped only when no Chromium is installed (CI's
``.ci/run`` installs it)."""

from __future__ import annotations

import asyncio
import json
import os
import time
import urllib.request
from pathlib import Path

import pytest

from legionrm.config import load_cluster
from legionrm.request_file import load_request
from tests.ray.browser import Browser, chromium

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.ray

HOSTS_JS = "[...document.querySelectorAll('#hosts tr[data-host]')].map(r => r.dataset.host + ':' + r.cells[2].innerText)"


@pytest.fixture(scope="module")
def dashboard(ray_cluster, ray_nodes):
    import ray

    from legionrm.dashboard.server import start_dashboard
    from legionrm.system import boot

    system = boot(load_cluster(), ray_nodes={"ray-a": ray_nodes["node_a"]}, heartbeat_s=0.5)
    actor, url = start_dashboard({"collection": system.collection, "scheduler": system.scheduler,
                                  "enactor": system.enactor}, {"address": "test"}, detached=False,
                                 name="dashboard-test", poll_s=0.5)
    yield system, url
    ray.kill(actor)
    system.shutdown()


def test_the_api_answers_json_without_errors(dashboard) -> None:
    _, url = dashboard
    with urllib.request.urlopen(url + "api/state", timeout=10) as r:
        view = json.loads(r.read())
    assert view["errors"] == [] and view["summary"]["hosts"] == 13
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.headers.get_content_type() == "text/html" and b"/api/state" in r.read()


def test_the_page_shows_the_hosts_and_a_submitted_request(dashboard, tmp_path: Path) -> None:
    exe = chromium()
    if exe is None:
        pytest.skip("no chromium on this machine (`apt-get install chromium`; .ci/run installs it in CI)")
    system, url = dashboard
    spec_hosts = {h.name for h in load_cluster().hosts} | {"ray-a"}
    request = load_request(ROOT / "examples" / "requests" / "workers.toml", user="alice")

    async def run() -> None:
        t0 = time.monotonic()
        async with Browser(exe) as b:
            await b.open(url)
            rows = await b.wait_for(f"(r => r.length >= {len(spec_hosts)} && r)({HOSTS_JS})")
            assert rows, await b.eval("document.body.innerText")
            shown = dict(r.split(":", 1) for r in rows)
            assert spec_hosts <= set(shown) and set(shown.values()) <= {"free", "busy", "busy_later"}
            assert await b.eval("document.querySelector('#running tbody').innerText.trim()") == "nothing runs"
            # submit; the open page shows it on its own (no reload)
            response = await asyncio.to_thread(system.schedule, request)
            assert response.ok, response.failures
            where = sorted({i.host for i in response.instances})
            row = await b.wait_for(f"(r => r && r.innerText)(document.querySelector('#running tr[data-request=\"{request.request_id}\"]'))")
            assert row and "alice" in row and all(h in row for h in where), row
            busy = await b.wait_for(f"(r => {json.dumps(where)}.every(h => r.includes(h + ':busy')) && r)({HOSTS_JS}.join(' '))")
            assert busy, await b.eval(f"{HOSTS_JS}.join(' ')")
            events = await b.eval("document.querySelector('#events tbody').innerText")
            assert request.request_id in events and "running" in events
            assert await b.eval("getComputedStyle(document.getElementById('errors')).display") == "none"
            await b.screenshot(Path(os.environ.get("LEGIONRM_DASHBOARD_PNG", tmp_path / "dashboard.png")))
        assert time.monotonic() - t0 < 30

    asyncio.run(run())


def test_a_dead_scheduler_is_one_line_on_the_page(dashboard) -> None:
    import ray

    from legionrm.dashboard.server import start_dashboard

    @ray.remote(num_cpus=0)
    class Gone:  # a Scheduler's methods, on an actor that will be dead
        def ping(self) -> str:
            return "ok"

        def status(self) -> None: ...

        def list_requests(self) -> None: ...

        def cycle_reports(self, after: int, timeout_s: float) -> None: ...

    system, _ = dashboard
    gone = Gone.remote()
    ray.get(gone.ping.remote(), timeout=30)
    ray.kill(gone)
    actor, url = start_dashboard({"collection": system.collection, "scheduler": gone, "enactor": system.enactor},
                                 detached=False, name="dashboard-dead", poll_s=0.5)
    try:
        with urllib.request.urlopen(url + "api/state", timeout=10) as r:
            view = json.loads(r.read())
    finally:
        ray.kill(actor)
    assert view["summary"]["hosts"] == 13  # the rest still shows
    assert "scheduler.status: the actor is dead" in view["errors"], view["errors"]
    assert not any("Traceback" in e or "\n" in e for e in view["errors"])
