"""The door on every ``/api/v1`` call, and the one shape of its answers.

Its middleware (:func:`door`) checks every
call but the open ones (``/api/v1/openapi.json`` and ``/api/v1/health``: the
route table's unsigned rows, :func:`legionrm.gateway.routes.open_paths`) with
:class:`~legionrm.gateway.signatures.SignatureCheck`, turns ``--as USER``
(the ``Legionrm-As`` header) into that user for an administrator and into
``auth.forbidden`` for anyone else, and turns every failure into one
:class:`~legionrm.models.api.ApiError` body with its HTTP status, never a
traceback.  The routes (``routes_*.py``) use the helpers here to read
bodies and answer; :mod:`legionrm.gateway.app` puts it all together.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ValidationError

from legionrm import codes
from legionrm.auth.errors import AuthError, AuthRefusedError
from legionrm.auth.guard import ReloadingRegistry
from legionrm.errors import ConfigError, LegionError, SchedulingError
from legionrm.gateway.intake import Intake
from legionrm.gateway.plane import ControlPlane, Unavailable
from legionrm.gateway.signatures import Refused, SignatureCheck
from legionrm.models.api import API_PREFIX, AS_HEADER, ApiError, Caller
from legionrm.state import StoreFault

log = logging.getLogger("legionrm.gateway")

PLANE: web.AppKey[ControlPlane] = web.AppKey("plane", ControlPlane)  # type: ignore[type-abstract]
PRINCIPALS: web.AppKey[ReloadingRegistry] = web.AppKey("principals", ReloadingRegistry)
SETTINGS: web.AppKey[dict[str, Any]] = web.AppKey("settings", dict)
INTAKE: web.AppKey[Intake] = web.AppKey("intake", Intake)
CALLER: web.RequestKey[Caller] = web.RequestKey("caller", Caller)
BODY: web.RequestKey[bytes] = web.RequestKey("body", bytes)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def answer(model: BaseModel | list[Any], status: int = 200) -> web.Response:
    """A model (or a list of models) as the JSON body of an answer."""
    if isinstance(model, BaseModel):
        text = model.model_dump_json()
    else:
        text = json.dumps([m.model_dump(mode="json") if isinstance(m, BaseModel) else m for m in model])
    return web.Response(text=text, status=status, content_type="application/json")


def refusal(status: int, code: str, reason: str, by: str = "gateway") -> web.Response:
    return answer(ApiError(code=code, reason=reason, by=by), status)


def caller_of(request: web.Request) -> Caller:
    """Who the door proved this call to be (and, with ``--as``, whom an administrator acts as)."""
    return request[CALLER]


def user_of(request: web.Request) -> str:
    """The user a call acts as: the ``--as`` user of an administrator, else the signer."""
    c = caller_of(request)
    return c.acting_as or c.user


async def body_of(request: web.Request, model: type[BaseModel]) -> Any:
    """The call's JSON body validated as ``model`` (a 422 ``request.invalid`` when it is not one)."""
    raw = request.get(BODY, b"") or await request.read()
    try:
        return model.model_validate_json(raw or b"{}")
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "body"
        raise Refused(422, codes.REQUEST_INVALID, f"{where}: {first.get('msg', 'invalid')}") from None


def status_of(exc: BaseException) -> tuple[int, str, str, str]:
    """HTTP status, code, reason and refuser for an error the control plane raised."""
    if isinstance(exc, AuthRefusedError):
        return (403 if exc.code in codes.ROLE_CODES or exc.code == codes.AUTH_IDENTITY else 401), exc.code, exc.reason, exc.by
    if isinstance(exc, Unavailable):
        return 503, Unavailable.code, str(exc), "gateway"
    if isinstance(exc, SchedulingError) and exc.code in (codes.REQUEST_UNKNOWN, codes.REQUEST_NO_INSTANCE):
        return 404, exc.code, str(exc), "scheduler"
    if isinstance(exc, StoreFault):  # the disk is full or failing: nothing was written, try again later
        return (507 if exc.code == codes.STATE_DISK_FULL else 503), exc.code, str(exc), "state"
    if isinstance(exc, (ConfigError, AuthError)):
        return 400, type(exc).__name__, str(exc), "gateway"
    if isinstance(exc, LegionError):
        return 400, str(getattr(exc, "code", None) or type(exc).__name__), str(exc), "system"
    return 500, "internal", f"{type(exc).__name__}: {exc}", "gateway"


def door(check: SignatureCheck, max_body: int, open_paths: frozenset[str]) -> Any:
    """The middleware: sign-in of every API call but those to ``open_paths`` (see the module doc) and one
    error shape."""
    callers: dict[tuple[str, tuple[str, ...], tuple[str, ...]], Caller] = {}  # see _caller

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            if request.path.startswith(API_PREFIX) and request.path not in open_paths:
                if (request.content_length or 0) > max_body:
                    raise Refused(413, codes.REQUEST_TOO_LARGE, f"the body is {request.content_length} bytes; "
                                  f"the gateway takes at most {max_body}")
                body = await request.read()
                principal = check.verify(request.method, request.raw_path, request.headers, body)
                request[BODY] = body
                request[CALLER] = _caller(request, principal, check.principals, callers)
            return await handler(request)
        except Refused as r:
            return refusal(r.status, r.code, r.reason)
        except web.HTTPRequestEntityTooLarge:
            return refusal(413, codes.REQUEST_TOO_LARGE, f"the body is over the gateway's limit of {max_body} bytes")
        except web.HTTPException as exc:  # aiohttp's own 404 / 405
            if exc.status >= 400 and request.path.startswith(API_PREFIX):
                return refusal(exc.status, codes.HTTP_STATUS.of("not_found" if exc.status == 404 else str(exc.status)),
                               f"{request.method} {request.path}: {exc.reason}")
            raise
        except Exception as exc:
            status, code, reason, by = status_of(exc)
            if status == 500:
                log.exception("gateway: %s %s failed", request.method, request.path)
            return refusal(status, code, reason.splitlines()[0] if reason else code, by)

    return middleware


def _caller(request: web.Request, principal: Any, principals: ReloadingRegistry,
            callers: dict[tuple[str, tuple[str, ...], tuple[str, ...]], Caller]) -> Caller:
    """The :class:`Caller` of a call ``principal`` signed.  Without ``--as`` it is made once per user as the
    registry holds them (name, roles, groups: ``callers``, emptied past 10,000) and shared: it is frozen."""
    as_user = request.headers.get(AS_HEADER)
    if as_user:
        if "admin" not in principal.roles:
            raise AuthRefusedError(codes.AUTH_FORBIDDEN, f"--as {as_user}: only an administrator acts as another user; "
                                   f"{principal.name!r} is not one", "gateway")
        target = principals.principal(as_user)
        if target is None or not target.is_user:
            raise AuthRefusedError(codes.AUTH_UNKNOWN_USER, f"--as {as_user}: no such user", "gateway")
        return Caller(user=principal.name, roles=principal.roles, groups=principal.groups, acting_as=as_user)
    key = (principal.name, principal.roles, principal.groups)
    caller = callers.get(key)
    if caller is None:
        if len(callers) > 10_000:  # users removed or changed: start afresh
            callers.clear()
        caller = callers[key] = Caller(user=principal.name, roles=principal.roles, groups=principal.groups,
                                       acting_as=None)
    return caller


def require_admin(request: web.Request, action: str) -> Caller:
    """The caller, if an administrator; else ``auth.forbidden``.  An administrator acting ``--as``
    another user has that user's roles here (``--as`` is never ignored)."""
    c = caller_of(request)
    roles = c.roles
    if c.acting_as:
        target = request.app[PRINCIPALS].principal(c.acting_as)
        roles = target.roles if target is not None else ()
    if "admin" not in roles:
        who = c.acting_as or c.user
        raise AuthRefusedError(codes.AUTH_FORBIDDEN, f"only an administrator may {action}; {who!r} is not one", "gateway")
    return c
