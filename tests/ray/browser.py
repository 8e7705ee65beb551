"""A tiny headless-Chromium driver over the DevTools protocol (CDP), for the
dashboard's browser test: open a page, evaluate JavaScript in it, take a
screenshot.  Needs only aiohttp (a dependency already) and Chromium from the
system's packages (``.ci/run`` installs Debian's ``chromium``)."""

from __future__ import annotations

import asyncio
import base64
import itertools
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1400,1300")


def chromium() -> str | None:
    return next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p), None)


class Browser:
    """``async with Browser(exe) as b: await b.open(url); await b.eval("...")``."""

    def __init__(self, exe: str, timeout_s: float = 20.0) -> None:
        self.exe, self.timeout_s = exe, timeout_s
        self._ids = itertools.count(1)

    async def __aenter__(self) -> "Browser":
        self.profile = tempfile.mkdtemp(prefix="lrm-chromium-")
        self.proc = subprocess.Popen([self.exe, *FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-port=0",
                                      "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = Path(self.profile) / "DevToolsActivePort"
        end = time.monotonic() + self.timeout_s
        while not (port_file.exists() and port_file.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > end:
                raise RuntimeError(f"chromium did not start (exit status {self.proc.poll()})")
            await asyncio.sleep(0.05)
        port = int(port_file.read_text().split()[0])
        self.http = aiohttp.ClientSession()
        async with self.http.get(f"http://127.0.0.1:{port}/json/list") as r:
            page = next(t for t in await r.json() if t["type"] == "page")
        self.ws = await self.http.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.ws.close()
        await self.http.close()
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        shutil.rmtree(self.profile, ignore_errors=True)

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        mid = next(self._ids)
        await self.ws.send_json({"id": mid, "method": method, "params": params})
        while True:
            msg = await asyncio.wait_for(self.ws.receive_json(), self.timeout_s)
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]

    async def open(self, url: str) -> None:
        await self.send("Page.navigate", url=url)

    async def eval(self, expression: str) -> Any:
        res = await self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in res:
            raise RuntimeError(f"{expression}: {res['exceptionDetails'].get('text')}")
        return res["result"].get("value")

    async def wait_for(self, expression: str, timeout_s: float = 15.0) -> Any:
        """Evaluate ``expression`` until it is truthy; its last value."""
        end = time.monotonic() + timeout_s
        while True:
            value = await self.eval(expression)
            if value or time.monotonic() > end:
                return value
            await asyncio.sleep(0.2)

    async def screenshot(self, path: Path) -> None:
        shot = await self.send("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(shot["data"]))
