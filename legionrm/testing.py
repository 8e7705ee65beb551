"""Shared fakes and builders for tests (and for people trying things out).

Nothing here imports Ray.
"""

from __future__ import annotations

import time
from typing import Callable, TypeVar

from legionrm.models import AccessPolicy, AttrValue, ResourceRecord

T = TypeVar("T")


class FakeClock:
    """A clock tests move by hand: ``clock()`` reads it, ``advance(s)`` moves it."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self.now = float(start)

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        self.now += seconds
        return self.now


def host(name: str, access: AccessPolicy | None = None, nodepool: str | None = None, **attrs: AttrValue) -> ResourceRecord:
    """A host record with the given attributes (``host("h1", cpus=8)``)."""
    return ResourceRecord(name=name, kind="host", nodepool=nodepool, attributes=attrs, access=access or AccessPolicy())


def vault(name: str, **attrs: AttrValue) -> ResourceRecord:
    return ResourceRecord(name=name, kind="vault", attributes=attrs)


def eventually(read: Callable[[], T], want: Callable[[T], bool], timeout_s: float = 30.0, every_s: float = 0.1) -> T:
    """``read()`` once ``want`` holds of it, polling every ``every_s`` for up to
    ``timeout_s``; the last value read otherwise (the caller's assert then
    shows it).  For what settles asynchronously, such as an actor ``ray.kill``
    ended: the kill is requested at once, the actor dies a moment later."""
    deadline = time.monotonic() + timeout_s
    got = read()
    while not want(got) and time.monotonic() < deadline:
        time.sleep(every_s)
        got = read()
    return got
