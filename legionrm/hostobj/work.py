"""Ready-made instance classes for real work on Ray nodes.

A class object names what an instance runs as ``"module:Class"``; the host
starts it as a Ray actor pinned to the reserved node with the reserved cpus
and memory.  :class:`Command` runs one shell command (or one Python function
named ``"module:function"``) and ends when it is done, so the request
completes by itself and everything is booked back.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from typing import Any

from legionrm.hostobj.policies import import_object

OUTPUT_LIMIT = 64 * 1024
"""Bytes of stdout / stderr kept per stream (the tail)."""


class Command:
    """Run ``command`` (a shell line) or ``function`` (``"module:function"``,
    called with ``args``) at once, in a thread.  ``result()`` answers with
    the outcome; ``linger_s`` after finishing, the instance exits (its Ray
    actor ends), which the host and the Scheduler see as the instance's end.
    ``timeout_s`` bounds the command itself."""

    def __init__(self, command: str = "", function: str = "", args: str = "", linger_s: float = 30.0,
                 timeout_s: float = 3600.0) -> None:
        if bool(command) == bool(function):
            raise ValueError("give exactly one of command= (a shell line) or function= ('module:function')")
        self.command, self.function, self.args = command, function, args
        self.linger_s, self.timeout_s = float(linger_s), float(timeout_s)
        self._done = threading.Event()
        self._result: dict[str, Any] = {}
        threading.Thread(target=self._run, name="legionrm-command", daemon=True).start()

    def _run(self) -> None:
        start = time.monotonic()
        try:
            if self.command:
                p = subprocess.run(self.command, shell=True, capture_output=True, text=True, timeout=self.timeout_s)
                self._result = {"rc": p.returncode, "stdout": p.stdout[-OUTPUT_LIMIT:], "stderr": p.stderr[-OUTPUT_LIMIT:]}
            else:
                fn = import_object(self.function, key="function")
                value = fn(*[a for a in self.args.split(",") if a]) if self.args else fn()
                self._result = {"rc": 0, "value": value}
        except subprocess.TimeoutExpired:
            self._result = {"rc": 124, "stderr": f"timed out after {self.timeout_s:g} s"}
        except Exception as exc:  # the work failed; the instance reports it, then ends
            self._result = {"rc": 1, "stderr": f"{type(exc).__name__}: {exc}"}
        self._result["seconds"] = round(time.monotonic() - start, 3)
        self._done.set()
        # ends the instance: its actor process exits, the host reaps it
        threading.Timer(self.linger_s, os._exit, args=(0,)).start()  # reach-in: os._exit is the stdlib's own name

    def done(self) -> bool:
        return self._done.is_set()

    def result(self, timeout_s: float = 60.0) -> dict[str, Any]:
        """The outcome (``rc``, ``stdout``/``stderr`` or ``value``, ``seconds``);
        ``{"rc": None}`` while still running after ``timeout_s``."""
        return dict(self._result) if self._done.wait(timeout_s) else {"rc": None}
