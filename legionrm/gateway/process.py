"""The gateway process: ``python -m legionrm.gateway --home H`` (what ``legionrm up`` starts).

It connects to the control plane ``up`` started in that home
(:mod:`legionrm.gateway.control`), serves ``[--host 127.0.0.1] [--port 8470]``
until SIGTERM, and writes ``H/gateway.json`` (mode 0600): its URL, pid,
certificate fingerprint and the dashboard's URL with its key (unless
``--no-dashboard``), and keeps legionrm's metrics gauges set from the dashboard's view.
Bound to 127.0.0.1 it speaks plain HTTP; bound anywhere
else, TLS with the certificate under ``H/tls/`` (:mod:`legionrm.gateway.tls`).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import os
import secrets
import signal
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from aiohttp import web

try:  # libuv's event loop: the gateway's sockets and callbacks in C (see run_loop)
    import uvloop
except ImportError:  # pragma: no cover -- a dependency; asyncio's own loop serves the same, slower
    uvloop = None  # type: ignore[assignment]

from legionrm import metrics
from legionrm.gateway import tls
from legionrm.gateway.app import make_app
from legionrm.gateway.control import RayControlPlane
from legionrm.gateway.dashboard import pages
from legionrm.gateway.dashboard.view import WAITING
from legionrm.gateway.door import INTAKE
from legionrm.gateway.serve import (
    DEFAULT_PORT,
    GATEWAY_FILE,
    LOOPBACK,
    start,
    write_private,
)

log = logging.getLogger("legionrm.gateway")
GAUGE_S = 10.0
"""How often the gauges are set from a poll of the whole view (every live and recent request, the
Collection's snapshot): each poll costs the gateway and the Scheduler tens of milliseconds, and a
metrics scrape comes every 10-15 s anyway.  (At 2 s it was a fifth of a busy gateway's CPU.)"""


async def _serve(args: argparse.Namespace) -> None:
    home = Path(args.home)
    plane = RayControlPlane(home)
    key = secrets.token_urlsafe(18)
    app = make_app(plane, home, dashboard_user=None if args.no_dashboard else args.admin, dashboard_key=key,
                   info=json.loads(args.info or "{}"))
    context, fp = None, ""
    if args.host != LOOPBACK:
        context, fp = tls.server_context(home, args.host)
    runner, url = await start(app, args.host, args.port, context)
    doc = {"url": url, "pid": os.getpid(), "fingerprint": fp, "host": args.host}
    if not args.no_dashboard:
        doc["dashboard"] = f"{url}/?key={key}"
    write_private(home / GATEWAY_FILE, doc)
    print(json.dumps(doc), flush=True)  # `up` reads the first line: the gateway is serving
    gc.freeze()  # what start-up made (Ray, the app) lives as long as the process: out of the collector's way
    gauges = asyncio.get_running_loop().create_task(keep_gauges(app, args.admin))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    batches, items = app[INTAKE].counts()
    print(f"legionrm gateway: stopped; its intake sent {items} items in {batches} batches", file=sys.stderr, flush=True)
    gauges.cancel()
    await runner.cleanup()
    (home / GATEWAY_FILE).unlink(missing_ok=True)


async def keep_gauges(app: web.Application, admin: str) -> None:
    """Every :data:`GAUGE_S`, the dashboard's view as ``admin`` -> legionrm's metrics gauges
    (exported by Ray's metrics agent), whether or not the pages are served."""
    gauges = metrics.ViewGauges(WAITING)
    while True:
        await asyncio.sleep(GAUGE_S)
        try:
            gauges.record(await pages.poll(app, admin))
        except Exception:  # noqa: BLE001 -- a missed poll leaves the gauges as they were
            log.exception("gateway: the gauges' poll failed")


def run_loop(main: Coroutine[Any, Any, None]) -> None:
    """Run ``main`` on uvloop when it is installed (its loop, transports and handles are C: the gateway
    spends less CPU a call, ``benchmarks/README.md``), else on asyncio's own loop."""
    if uvloop is not None:
        uvloop.run(main)
    else:
        asyncio.run(main)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m legionrm.gateway", description="serve legionrm's gateway")
    p.add_argument("--home", required=True, help="the legionrm home `up` started the system in")
    p.add_argument("--host", default=LOOPBACK, help="address to bind (default %(default)s; any other serves TLS)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default %(default)s; 0: a free one)")
    p.add_argument("--admin", default="admin", help="the administrator the dashboard's pages act for")
    p.add_argument("--no-dashboard", action="store_true", help="serve the API only, not the dashboard's pages")
    p.add_argument("--info", help="JSON shown in the dashboard's header")
    args = p.parse_args(argv)
    try:
        run_loop(_serve(args))
    except Exception as exc:  # noqa: BLE001 -- the process's one line
        print(f"legionrm gateway: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    return 0
