"""The dashboard the gateway serves, in a real headless browser (Chromium from
the system's packages): against a system booted on the session cluster and its
gateway (over the Ray control plane, as ``up`` serves it), the page loads,
shows every host of the running system with its state, and, without a reload,
shows a request after a user submits it through the gateway, and the hosts it
runs on.  ``/api/state`` answers JSON with no errors (each poll the same signed
calls as the API, made for the page's administrator); a dead Scheduler shows as
one line on the page, not a traceback.  The browser test is skipped only when no
Chromium is installed (CI's ``.ci/run`` installs it)."""

from __future__ import annotations

import asyncio
import json
import os
import time
import urllib.request
from pathlib import Path

import pytest

from legionrm.client.client import Client
from legionrm.client.credentials import Credentials
from legionrm.config import load_cluster
from tests.clusters import with_classes
from tests.ray.browser import Browser, chromium

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.ray

HOSTS_JS = "[...document.querySelectorAll('#hosts tr[data-host]')].map(r => r.dataset.host + ':' + r.cells[2].innerText)"


KEY = "the-page-key"


@pytest.fixture(scope="module")
def dashboard(ray_cluster, ray_nodes, tmp_path_factory):
    import dataclasses

    from legionrm.auth.guard import ensure_home, signer_for
    from legionrm.gateway.app import make_app
    from legionrm.gateway.control import RayControlPlane
    from legionrm.gateway.serve import in_thread
    from legionrm.system import boot

    home = tmp_path_factory.mktemp("dash-home")
    alice = ensure_home(home, operator="ops").add_user("alice").private_key
    system = boot(with_classes(load_cluster(), "Worker"), ray_nodes={"ray-a": ray_nodes["node_a"]}, heartbeat_s=0.5, auth_home=home)
    try:
        app = make_app(RayControlPlane(home), home, dashboard_user="ops", dashboard_key=KEY, info={"address": "test"})
        with in_thread(app) as url:
            creds = Credentials.of(url, "alice", alice).write(home / "alice.credentials")
            yield home, url, Client.from_credentials(creds)
    finally:
        dataclasses.replace(system, signer=signer_for(home, "ops")).shutdown()


def test_the_api_answers_json_without_errors(dashboard) -> None:
    _, url, _ = dashboard
    with urllib.request.urlopen(f"{url}/api/state?key={KEY}", timeout=10) as r:
        view = json.loads(r.read())
    assert view["errors"] == [] and view["summary"]["hosts"] == 13 and view["info"] == {"address": "test"}
    with urllib.request.urlopen(f"{url}/?key={KEY}", timeout=10) as r:
        assert r.headers.get_content_type() == "text/html" and b"/api/state" in r.read()


def test_the_page_shows_the_hosts_and_a_submitted_request(dashboard, tmp_path: Path) -> None:
    exe = chromium()
    if exe is None:
        pytest.skip("no chromium on this machine (`apt-get install chromium`; .ci/run installs it in CI)")
    _, url, alice = dashboard
    spec_hosts = {h.name for h in load_cluster().hosts} | {"ray-a"}
    request = (ROOT / "examples" / "requests" / "workers.toml").read_text()

    async def run() -> None:
        t0 = time.monotonic()
        async with Browser(exe) as b:
            await b.open(f"{url}/?key={KEY}")
            rows = await b.wait_for(f"(r => r.length >= {len(spec_hosts)} && r)({HOSTS_JS})")
            assert rows, await b.eval("document.body.innerText")
            shown = dict(r.split(":", 1) for r in rows)
            assert spec_hosts <= set(shown) and set(shown.values()) <= {"free", "busy", "busy_later"}
            assert await b.eval("document.querySelector('#running tbody').innerText.trim()") == "nothing runs"
            # submit; the open page shows it on its own (no reload)
            submitted = await asyncio.to_thread(alice.submit, request)
            assert submitted.ok, submitted.response.failures
            where = sorted({i.host for i in submitted.response.instances})
            row = await b.wait_for(f"(r => r && r.innerText)(document.querySelector('#running tr[data-request=\"{submitted.id}\"]'))")
            assert row and "alice" in row and all(h in row for h in where), row
            busy = await b.wait_for(f"(r => {json.dumps(where)}.every(h => r.includes(h + ':busy')) && r)({HOSTS_JS}.join(' '))")
            assert busy, await b.eval(f"{HOSTS_JS}.join(' ')")
            events = await b.eval("document.querySelector('#events tbody').innerText")
            assert submitted.id in events and "running" in events
            assert await b.eval("getComputedStyle(document.getElementById('errors')).display") == "none"
            await b.screenshot(Path(os.environ.get("LEGIONRM_DASHBOARD_PNG", tmp_path / "dashboard.png")))
        assert time.monotonic() - t0 < 30

    asyncio.run(run())


def test_a_dead_scheduler_is_one_line_on_the_page(dashboard) -> None:
    import ray

    from legionrm.gateway.app import make_app
    from legionrm.gateway.control import RayControlPlane
    from legionrm.gateway.serve import in_thread

    @ray.remote(num_cpus=0)
    class Gone:  # a Scheduler's methods, on an actor that will be dead
        def ping(self) -> str:
            return "ok"

        def status(self, proof: object = None) -> None: ...

        def list_requests(self, user: object = None, state: object = None, proof: object = None) -> None: ...

        def cycle_reports(self, after: int, timeout_s: float, proof: object = None) -> None: ...

    home, _, _ = dashboard
    gone = Gone.remote()
    ray.get(gone.ping.remote(), timeout=30)
    ray.kill(gone)
    plane = RayControlPlane(home)
    plane._handles[plane._actor("scheduler")] = gone  # reach-in: the plane's found default Scheduler is this dead one
    with in_thread(make_app(plane, home, dashboard_user="ops", dashboard_key=KEY)) as url:
        with urllib.request.urlopen(f"{url}/api/state?key={KEY}", timeout=30) as r:
            view = json.loads(r.read())
    assert view["summary"]["hosts"] == 13  # the rest still shows
    assert any(e.startswith("scheduler.status: system.unavailable: the scheduler actor is dead") for e in view["errors"]), \
        view["errors"]
    assert not any("Traceback" in e or "\n" in e for e in view["errors"])
