"""Which web stack serves the gateway: aiohttp or FastAPI on uvicorn, measured.

Both servers do what the gateway does with a submit, minus the control plane:
read the body, verify its RFC 9421 signature and Content-Digest with the
gateway's own :class:`~legionrm.gateway.signatures.SignatureCheck` (registry
lookup, nonce, clock), validate it as a
:class:`~legionrm.models.api.SubmitBody`, and answer a small JSON object.
Each runs in a process of its own; the load comes from another process: 20
concurrent clients, each on one keep-alive connection, sending pre-signed
calls (so signing costs neither side).  Prints calls a second and the median
and 99th-percentile round trip for each.

FastAPI and uvicorn are not legionrm dependencies: ``pip install fastapi
uvicorn`` to run this (the FastAPI half is skipped with a note otherwise).

    python benchmarks/bench_gateway_stack.py [--calls 4000] [--clients 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import info

BODY = json.dumps({"request": {"object": [{"class_name": "Worker", "count": 2, "cpus": 1}]}}).encode()
PATH = "/api/v1/requests"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _check(home: str):  # type: ignore[no-untyped-def]
    from legionrm.auth.guard import auth_home
    from legionrm.auth.registry import Registry
    from legionrm.auth.guard import ReloadingRegistry
    from legionrm.gateway.signatures import RateLimit, SignatureCheck

    # calls are signed before the load starts: a wide clock window, so none expires while queued
    return SignatureCheck(ReloadingRegistry(Registry(auth_home(home))), rate=RateLimit(rate=1e9, burst=1e9), skew_s=3600)


def serve_aiohttp(home: str, port: int) -> None:
    from aiohttp import web

    from legionrm.gateway.signatures import Refused
    from legionrm.models.api import SubmitBody

    check = _check(home)

    async def submit(request: web.Request) -> web.Response:
        body = await request.read()
        try:
            who = check.verify(request.method, request.raw_path, request.headers, body)
        except Refused as r:
            return web.json_response({"code": r.code}, status=r.status)
        sub = SubmitBody.model_validate_json(body)
        return web.json_response({"id": "req-1", "user": who.name, "objects": len(sub.request["object"])}, status=201)

    app = web.Application()
    app.router.add_post(PATH, submit)
    web.run_app(app, host="127.0.0.1", port=port, access_log=None, print=None)


def serve_fastapi(home: str, port: int) -> None:
    import uvicorn
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse

    from legionrm.gateway.signatures import Refused
    from legionrm.models.api import SubmitBody

    check = _check(home)
    app = FastAPI()

    async def submit(request: Request) -> JSONResponse:
        body = await request.body()
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        try:
            who = check.verify(request.method, target, request.headers, body)
        except Refused as r:
            return JSONResponse({"code": r.code}, status_code=r.status)
        sub = SubmitBody.model_validate_json(body)
        return JSONResponse({"id": "req-1", "user": who.name, "objects": len(sub.request["object"])}, status_code=201)

    submit.__annotations__ = {"request": Request, "return": JSONResponse}  # this module's annotations are strings
    app.post(PATH)(submit)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="error", access_log=False)


async def load(url: str, signed: list[dict[str, str]], clients: int) -> tuple[float, list[float], int]:
    """Send every pre-signed call over ``clients`` keep-alive connections; wall time, latencies, failures."""
    import aiohttp

    queue: asyncio.Queue[dict[str, str]] = asyncio.Queue()
    for h in signed:
        queue.put_nowait(h)
    lat: list[float] = []
    bad = 0

    async def worker() -> None:
        nonlocal bad
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1)) as s:
            while not queue.empty():
                h = queue.get_nowait()
                t = time.perf_counter()
                async with s.post(url + PATH, data=BODY, headers=h) as r:
                    await r.read()
                    bad += r.status != 201
                lat.append(time.perf_counter() - t)

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    return time.perf_counter() - t0, lat, bad


def presign(key, n: int) -> list[dict[str, str]]:  # type: ignore[no-untyped-def]
    import httpx

    from legionrm.client.signing import RequestSigner

    signer = RequestSigner("bench", key)
    out = []
    for _ in range(n):
        req = httpx.Request("POST", "http://127.0.0.1" + PATH, content=BODY, headers={"Content-Type": "application/json"})
        signer.sign(req, BODY)
        out.append({k: v for k, v in req.headers.items() if k.lower() not in ("host", "content-length")})
    return out


def wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited: {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("the server did not start")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=4000)
    p.add_argument("--clients", type=int, default=20)
    p.add_argument("--serve", choices=("aiohttp", "fastapi"), help=argparse.SUPPRESS)
    p.add_argument("--home", help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.serve:
        (serve_aiohttp if args.serve == "aiohttp" else serve_fastapi)(args.home, args.port)
        return 0
    from legionrm.auth.guard import auth_home
    from legionrm.auth.registry import Registry

    home = tempfile.mkdtemp(prefix="lrm-bench-")
    key = Registry(auth_home(home)).add_user("bench").private_key
    print(f"gateway stack: a signed submit-like POST, {args.calls} calls from {args.clients} keep-alive clients "
          f"(server and load in separate processes, {os.cpu_count()} cores)")
    for stack in ("aiohttp", "fastapi"):
        if stack == "fastapi":
            try:
                import fastapi  # noqa: F401
                import uvicorn  # noqa: F401
            except ImportError:
                info("fastapi+uvicorn", "skipped", note="pip install fastapi uvicorn to measure it")
                continue
        port = _free_port()
        proc = subprocess.Popen([sys.executable, __file__, "--serve", stack, "--home", home, "--port", str(port)])
        try:
            wait_port(port, proc)
            asyncio.run(load(f"http://127.0.0.1:{port}", presign(key, 200), args.clients))  # warm up
            wall, lat, bad = asyncio.run(load(f"http://127.0.0.1:{port}", presign(key, args.calls), args.clients))
        finally:
            proc.terminate()
            proc.wait(10)
        lat.sort()
        p99 = lat[min(len(lat) - 1, int(0.99 * len(lat)))]
        info(f"{stack}: calls a second", f"{len(lat) / wall:.0f}/s",
             note=f"median {statistics.median(lat) * 1e3:.1f} ms, p99 {p99 * 1e3:.1f} ms, {bad} refused")
    return 0


if __name__ == "__main__":
    sys.exit(main())
