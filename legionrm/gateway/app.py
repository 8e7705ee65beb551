"""The gateway's aiohttp application, put together: the door, the routes, the pages.

:func:`make_app` builds it over a :class:`~legionrm.gateway.plane.ControlPlane`
and the home whose registry names the users; :mod:`legionrm.gateway.serve`
runs it as the gateway process.
"""

from __future__ import annotations

import os
from typing import Any

from aiohttp import web

from legionrm.auth.guard import ReloadingRegistry, auth_home
from legionrm.auth.registry import Registry
from legionrm.gateway import routes
from legionrm.gateway.dashboard import pages
from legionrm.gateway.door import INTAKE, PLANE, PRINCIPALS, SETTINGS, door
from legionrm.gateway.intake import Intake
from legionrm.gateway.plane import ControlPlane
from legionrm.gateway.signatures import (
    DEFAULT_MAX_BODY,
    RateLimit,
    SignatureCheck,
)


def make_app(plane: ControlPlane, home: str | os.PathLike[str], *, max_body: int = DEFAULT_MAX_BODY,
             rate: RateLimit | None = None, dashboard_user: str | None = None, dashboard_key: str = "",
             info: dict[str, Any] | None = None) -> web.Application:
    """The gateway over ``plane``, its users those of ``home``'s registry (see the module doc).
    With ``dashboard_user`` (an administrator) it also serves the dashboard's pages to whoever
    holds ``dashboard_key`` (:mod:`legionrm.gateway.dashboard.pages`); without, the API alone."""
    principals = ReloadingRegistry(Registry(auth_home(home)))
    check = SignatureCheck(principals, rate=rate)
    app = web.Application(middlewares=[door(check, max_body, routes.open_paths())], client_max_size=max_body)
    app[PLANE] = plane
    app[INTAKE] = Intake(plane)  # submits and cancels go to the Scheduler in batches
    app[PRINCIPALS] = principals
    app[SETTINGS] = {"home": str(home), "info": dict(info or {}), "dashboard_user": dashboard_user,
                     "dashboard_key": dashboard_key}
    routes.add(app)
    if dashboard_user is not None:
        pages.add(app)

    async def closing(_: web.Application) -> None:
        await plane.close()

    app.on_cleanup.append(closing)
    return app
