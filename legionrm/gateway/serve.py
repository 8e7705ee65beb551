"""Serving the gateway's application: on a loop, or from a thread (tests, benchmarks).

:mod:`legionrm.gateway.process` runs it as its own process for ``legionrm up``
and writes ``<home>/gateway.json`` (:func:`read_gateway` reads it).  No Ray here.
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from aiohttp import web

GATEWAY_FILE = "gateway.json"
DEFAULT_PORT = 8470
LOOPBACK = "127.0.0.1"


async def start(app: web.Application, host: str = LOOPBACK, port: int = 0,
                ssl_context: ssl.SSLContext | None = None) -> tuple[web.AppRunner, str]:
    """Serve ``app`` on ``host:port`` (0: a free port); the runner and the base URL."""
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port, ssl_context=ssl_context, reuse_address=True)
    await site.start()
    bound = runner.addresses[0][1]
    return runner, f"{'https' if ssl_context else 'http'}://{host}:{bound}"


@contextmanager
def in_thread(app: web.Application, host: str = LOOPBACK, port: int = 0,
              ssl_context: ssl.SSLContext | None = None) -> Iterator[str]:
    """Serve ``app`` from a thread of its own while the block runs; yields the base URL."""
    loop = asyncio.new_event_loop()
    ready: dict[str, Any] = {}
    started = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            ready["runner"], ready["url"] = loop.run_until_complete(start(app, host, port, ssl_context))
        except BaseException as exc:  # noqa: BLE001 -- handed to the caller below
            ready["error"] = exc
        started.set()
        if "error" not in ready:
            loop.run_forever()

    thread = threading.Thread(target=run, name="legionrm-gateway", daemon=True)
    thread.start()
    started.wait(30)
    if "error" in ready:
        raise ready["error"]
    try:
        yield ready["url"]
    finally:
        asyncio.run_coroutine_threadsafe(ready["runner"].cleanup(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()


def write_private(path: Path, doc: dict[str, Any]) -> None:
    """``doc`` as JSON in ``path``, mode 0600 from the start."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchmod(f.fileno(), 0o600)
        json.dump(doc, f, indent=1)


def read_gateway(home: str | os.PathLike[str]) -> dict[str, Any] | None:
    """What the gateway of ``home`` wrote about itself (None: none is serving, or it left no file)."""
    try:
        doc = json.loads((Path(home) / GATEWAY_FILE).read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None
