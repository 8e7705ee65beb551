"""The dashboard's web server: a detached Ray actor serving one page.

Why an actor and not a process of its own: it lives and dies with the
system's Ray (``down`` stops the head's process group, or kills the named
actors of a joined Ray, and the dashboard goes with them, with no PID file
of its own); it reaches the other actors by name in the Ray namespace; and
the gauges it sets are exported by Ray's metrics agent like any actor's.

An async actor (``num_cpus=0``) running aiohttp on its own event loop,
bound to 127.0.0.1 on a free port (or the one asked).  Every ``poll_s`` it
asks the Collection for a snapshot, the Scheduler for its requests, status
and last cycle, and the Enactor for its counts, each call with a timeout;
:func:`legionrm.dashboard.view.build_view` turns the answers into the JSON
``/api/state`` serves, and the same poll sets the metrics' gauges.  A part
that fails or times out is one line in the page's ``errors``, never a
traceback.  ``/`` is one static page (``page.html``, inline CSS and JS, no
build step) that fetches ``/api/state`` every two seconds.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import secrets
import socket
import time
from importlib import resources
from typing import Any

import ray
from aiohttp import web
from ray.exceptions import GetTimeoutError, RayActorError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from legionrm import codes, metrics
from legionrm.auth import CallSigner, signed
from legionrm.auth.actordoor import ActorDoor
from legionrm.auth.guard import DASHBOARD as DASHBOARD_AGENT
from legionrm.auth.guard import Guard, load_agent
from legionrm.dashboard.view import WAITING, Poll, build_view
from legionrm.models import CycleReport
from legionrm.naming import COLLECTION, ENACTOR, NAMESPACE, SCHEDULER, named_actor

DASHBOARD = "dashboard"
"""The dashboard actor's name in the legionrm namespace."""

CALL_TIMEOUT_S = 5.0
POLL_S = 2.0
KEY_COOKIE = "legionrm_dashboard_key"


def one_line(exc: BaseException) -> str:
    """An exception as one short line (a Ray task error's last line: its cause)."""
    if isinstance(exc, (asyncio.TimeoutError, GetTimeoutError)):
        return f"no answer within {CALL_TIMEOUT_S:g} s"
    if isinstance(exc, RayActorError):
        return "the actor is dead"
    lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
    return (lines[-1] if lines else type(exc).__name__)[:300]


SIGNED: dict[tuple[str, str], Any] = {
    ("collection", "snapshot"): {},
    ("scheduler", "list_requests"): {"user": None, "state": None},
    ("scheduler", "status"): {},
    ("scheduler", "cycle_reports"): lambda after, timeout_s: {"after": after, "timeout_s": timeout_s},
}
"""The calls a system that checks who calls wants a proof for, with the arguments the proof is bound to."""


@ray.remote(num_cpus=0, max_restarts=0)
class DashboardActor:
    """``handles`` maps ``collection`` / ``scheduler`` / ``enactor`` to actor
    handles; a missing one is looked up by its name at each poll (so a system
    booted after the dashboard is found).  ``info`` is shown in the page's
    header (e.g. the Ray address and Ray's own dashboard)."""

    def __init__(self, handles: dict[str, Any] | None = None, info: dict[str, Any] | None = None,
                 poll_s: float = POLL_S, auth_home: str | None = None) -> None:
        # on a system that checks who calls, the dashboard signs as its own agent
        self.signer = CallSigner(load_agent(auth_home, DASHBOARD_AGENT), time.time) if auth_home else None
        # the view shows every host and everyone's work: with a home, the actor's calls are an administrator's
        # and the page needs the key that ``start`` puts in the URL it returns (to the administrator who started it)
        self.door = ActorDoor(Guard.for_home(auth_home, by=DASHBOARD) if auth_home else None, DASHBOARD)
        self.key = secrets.token_urlsafe(18) if auth_home else None
        self.handles = dict(handles or {})
        self.info = dict(info or {})
        self.poll_s = poll_s
        self.view: dict[str, Any] | None = None
        self.url = ""
        self._runner: web.AppRunner | None = None
        self._task: asyncio.Task | None = None
        self._report: CycleReport | None = None
        self.gauges = metrics.ViewGauges(WAITING)

    async def start(self, host: str = "127.0.0.1", port: int = 0, proof: Any = None) -> str:
        """Serve on ``host:port`` (0: a free port) and start polling; returns the URL (with the page's
        key, on a system that checks who calls: an administrator's call).  Idempotent."""
        self.door.require_system(proof, "start", {"host": host, "port": port}, admin=True, agents=())
        if self._runner is not None:
            return self._keyed(self.url)
        app = web.Application()
        app.router.add_get("/", self._page)
        app.router.add_get("/api/state", self._state)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        await web.SockSite(self._runner, sock).start()
        self.url = f"http://{host}:{sock.getsockname()[1]}/"
        self.view = await self._poll()
        self._task = asyncio.get_running_loop().create_task(self._loop())
        return self._keyed(self.url)

    def _keyed(self, url: str) -> str:
        return url if self.key is None else f"{url}?key={self.key}"

    async def address(self) -> str:
        """Where it serves (without the key: the page refuses it)."""
        return self.url

    async def ping(self) -> str:
        return "ok"

    async def stop(self, proof: Any = None) -> None:
        """Stop serving: an administrator's."""
        self.door.require_system(proof, "stop", {}, admin=True, agents=())
        if self._task is not None:
            self._task.cancel()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.poll_s)
            try:
                self.view = await self._poll()
            except Exception as exc:  # the page shows the last view and this error
                self.view = {**(self.view or {}), "errors": [f"dashboard: {one_line(exc)}"]}

    # --- the poll ---------------------------------------------------------------------------

    def _handle(self, name: str) -> Any:
        return self.handles.get(name) or named_actor({"collection": COLLECTION, "scheduler": SCHEDULER,
                                                      "enactor": ENACTOR}[name])

    async def _ask(self, errors: list[str], part: str, method: str, *args: Any) -> Any:
        handle = self._handle(part)
        if handle is None:
            errors.append(f"{part}: no actor named {part!r} is running")
            return None
        kwargs: dict[str, Any] = {}
        if self.signer is not None and (part, method) in SIGNED:
            bound = SIGNED[(part, method)]
            to = {"collection": COLLECTION, "scheduler": SCHEDULER, "enactor": ENACTOR}[part]
            kwargs["proof"] = self.signer.sign(method, bound(*args) if callable(bound) else bound, to=to)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(getattr(handle, method).remote(*args, **kwargs).future()),
                                          CALL_TIMEOUT_S)
        except Exception as exc:
            errors.append(f"{part}.{method}: {one_line(exc)}")
            return None

    async def poll(self, proof: Any = None) -> dict[str, Any]:
        """Poll now and return the view (every host, everyone's work): an administrator's."""
        self.door.require_system(proof, "poll", {}, admin=True, agents=())
        return await self._poll()

    async def _poll(self) -> dict[str, Any]:
        """Ask every actor at once (each with its timeout), build the view, set the gauges."""
        errors: list[str] = []
        after = self._report.cycle if self._report is not None else 0  # only the reports not seen yet
        snap, requests, status, reports, enactor = await asyncio.gather(
            self._ask(errors, "collection", "snapshot"), self._ask(errors, "scheduler", "list_requests"),
            self._ask(errors, "scheduler", "status"), self._ask(errors, "scheduler", "cycle_reports", after, 0.0),
            self._ask(errors, "enactor", "stats"))
        if reports:
            self._report = reports[-1]
        elif status is not None and self._report is not None and status.last_cycle < self._report.cycle:
            self._report = None  # a new Scheduler counts its cycles from 1 again
        records = [snap.record(n) for n in snap.resource_names()] if snap is not None else None
        view = build_view(Poll(now=time.time(), records=records, requests=requests, status=status,
                               report=self._report, enactor=enactor, errors=sorted(errors)))
        view["info"] = self.info
        self.gauges.record(view)
        return view

    # --- HTTP ---------------------------------------------------------------------------------

    def _refused(self, request: web.Request) -> web.Response | None:
        """403 (``auth.no_proof``) unless the request carries the page's key (in the URL or its cookie)."""
        if self.key is None:
            return None
        given = request.query.get("key") or request.cookies.get(KEY_COOKIE) or ""
        if hmac.compare_digest(given.encode(), self.key.encode()):
            return None
        body = {"code": codes.AUTH_NO_PROOF, "reason": "the dashboard shows every host and everyone's work: open the URL "
                "`legionrm up` printed (it carries the administrator's key)"}
        return web.Response(status=403, text=json.dumps(body), content_type="application/json")

    async def _page(self, request: web.Request) -> web.Response:
        if (refused := self._refused(request)) is not None:
            return refused
        page = resources.files("legionrm.dashboard").joinpath("page.html").read_text(encoding="utf-8")
        out = web.Response(text=page, content_type="text/html", headers={"Cache-Control": "no-store"})
        if self.key is not None:  # the page's own fetches of /api/state carry it
            out.set_cookie(KEY_COOKIE, self.key, httponly=True, samesite="Strict")
        return out

    async def _state(self, request: web.Request) -> web.Response:
        if (refused := self._refused(request)) is not None:
            return refused
        view = self.view if self.view is not None else await self._poll()
        return web.Response(text=json.dumps(view), content_type="application/json",
                            headers={"Cache-Control": "no-store"})


def start_dashboard(handles: dict[str, Any] | None = None, info: dict[str, Any] | None = None, *,
                    port: int = 0, detached: bool = True, name: str = DASHBOARD, poll_s: float = POLL_S,
                    timeout_s: float = 30.0, auth_home: str | None = None,
                    signer: CallSigner | None = None) -> tuple[Any, str]:
    """Start the dashboard actor on this driver's node (it binds 127.0.0.1
    there) and return its handle and URL (with ``auth_home``: the URL carries
    the page's key, and ``signer`` must be an administrator's).  Needs Ray initialised."""
    opts: dict[str, Any] = dict(name=name, namespace=NAMESPACE, scheduling_strategy=NodeAffinitySchedulingStrategy(
        ray.get_runtime_context().get_node_id(), soft=False))
    if detached:
        opts["lifetime"] = "detached"
    actor = DashboardActor.options(**opts).remote(handles, info, poll_s, auth_home)
    ray.get(actor.ping.remote(), timeout=timeout_s)  # up first: it refuses proofs made before it started
    proof = signed(signer, "start", {"host": "127.0.0.1", "port": port}, to=DASHBOARD)
    url = ray.get(actor.start.remote("127.0.0.1", port, proof=proof), timeout=timeout_s)
    return actor, url
