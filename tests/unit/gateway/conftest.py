"""A gateway over an in-process system, served on 127.0.0.1 (a free port) for the test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from legionrm.auth.guard import auth_home, ensure_home
from legionrm.auth.keys import load_private_key
from legionrm.auth.registry import Registry
from legionrm.client.client import Client
from legionrm.client.credentials import Credentials
from legionrm.config import load_cluster
from legionrm.gateway.app import make_app
from legionrm.gateway.local import LocalPlane
from legionrm.gateway.serve import in_thread
from legionrm.inprocess import LocalSystem

ADMIN = "root"
DASH_KEY = "the-page-key"


@dataclass
class Gateway:
    home: Path
    url: str
    registry: Registry
    system: LocalSystem

    def credentials(self, user: str, **add: Any) -> Path:
        """A credentials file for ``user`` (added first unless they exist), as ``user add`` writes one."""
        path = self.home / f"{user}.credentials"
        if not path.exists():
            cred = self.registry.add_user(user, **add)
            Credentials.of(self.url, user, cred.private_key).write(path)
        return path

    def client(self, user: str, **kw: Any) -> Client:
        if user == ADMIN:
            return Client.from_credentials(self.admin_path, **kw)
        return Client.from_credentials(self.credentials(user), **kw)

    admin_path: Path = Path()


def serve(tmp_path: Path, wrap: Callable[[LocalPlane], Any] | None = None, **app_kw: Any) -> Iterator[Gateway]:
    """A gateway over an in-process system; ``wrap`` puts something before its control plane (a fake scheduler)."""
    home = tmp_path / "home"
    ensure_home(home, operator=ADMIN)
    system = LocalSystem(load_cluster(None))
    plane = LocalPlane(system, home)
    app = make_app(wrap(plane) if wrap is not None else plane, home, **app_kw)
    with in_thread(app) as url:
        gw = Gateway(home=home, url=url, registry=Registry(auth_home(home)), system=system)
        gw.admin_path = home / "admin.credentials"
        admin_key = Registry(auth_home(home)).key_path(ADMIN)
        Credentials.of(url, ADMIN, load_private_key(admin_key)).write(gw.admin_path)
        yield gw


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    yield from serve(tmp_path, dashboard_user=ADMIN, dashboard_key=DASH_KEY)


@pytest.fixture
def make_gateway(tmp_path: Path) -> Iterator[Callable[..., Gateway]]:
    """A gateway with other settings (a small body limit, a low rate, no dashboard)."""
    made: list[Iterator[Gateway]] = []

    def make(**app_kw: Any) -> Gateway:
        it = serve(tmp_path, **app_kw)
        made.append(it)
        return next(it)

    yield make
    for it in made:
        for _ in it:  # runs the server's shutdown
            pass


WORKER = {"object": [{"class_name": "Worker", "count": 1, "cpus": 1}]}
