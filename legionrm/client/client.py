"""The Python client: every user verb as one signed HTTP call to the gateway.

::

    from legionrm import Client
    c = Client.from_credentials()           # --credentials, $LEGIONRM_CREDENTIALS, ~/.legionrm/credentials
    r = c.submit({"object": [{"class_name": "Worker", "count": 2, "cpus": 1}]})
    c.show(r.id).state; c.wait(r.id); c.cancel(r.id)

One ``httpx.Client`` with keep-alive; each call signed (:mod:`legionrm.client.signing`).
An https gateway is reached only if its certificate's SHA-256 fingerprint is
the one pinned in the credentials.  Results are the gateway's pydantic models
(:mod:`legionrm.models.api`); a refusal raises a
:class:`~legionrm.client.errors.GatewayError` subclass carrying its code.
"""

from __future__ import annotations

import json
import os
import ssl
import time
from typing import Any, Self, TypeVar
from urllib.parse import quote, urlsplit

import httpx
from pydantic import BaseModel, ValidationError

from legionrm import codes
from legionrm.client.credentials import Credentials, find, fingerprint
from legionrm.client.errors import ConnectionFailedError, GatewayError, error_for
from legionrm.client.signing import RequestSigner, load_key
from legionrm.models.api import (
    API_PREFIX,
    AS_HEADER,
    Caller,
    CancelBody,
    CancelResult,
    DrainBody,
    EventList,
    GatewayStatus,
    HostDrained,
    HostList,
    LogsResult,
    PlanBody,
    PlanResult,
    PoolEditBody,
    PoolList,
    QueryBody,
    QueryResult,
    Reloaded,
    ReloadBody,
    RequestList,
    SchedulerList,
    SubmitBody,
    SubmitResult,
)
from legionrm.models.requests import FINAL_STATES, RequestInfo, StatusEvent
from legionrm.models.schedules import ScheduleSuite

M = TypeVar("M", bound=BaseModel)
Request = dict[str, Any] | str


RESULT_GRACE_S = 10.0
"""How long ``wait`` waits, after a request ended, for its runs' exit code."""


class Client:
    """A user's connection to the gateway named in their credentials (see the module doc).
    ``as_user``: an administrator's calls made as that user (refused for anyone else)."""

    def __init__(self, credentials: Credentials, *, as_user: str | None = None, timeout: float = 60.0) -> None:
        self.credentials, self.as_user = credentials, as_user
        self.user = credentials.user
        self._signer = RequestSigner(credentials.user, load_key(credentials.private_key_pem, credentials.path))
        self._http = httpx.Client(base_url=credentials.url, timeout=timeout, verify=_tls(credentials),
                                  headers={AS_HEADER: as_user} if as_user else None)

    @classmethod
    def from_credentials(cls, path: str | os.PathLike[str] | None = None, **kw: Any) -> Client:
        """The client of the credentials file at ``path``, or found where a client looks (see
        :func:`legionrm.client.credentials.find`)."""
        return cls(find(path), **kw)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # --- one call ----------------------------------------------------------------------------

    def call(self, method: str, path: str, body: BaseModel | None = None, params: dict[str, Any] | None = None) -> Any:
        """One signed call; the answer's JSON, or the error it carries raised."""
        content = body.model_dump_json(exclude_defaults=True).encode() if body is not None else b""
        query = {k: v for k, v in (params or {}).items() if v is not None}
        req = self._http.build_request(method, API_PREFIX + path, content=content or None, params=query or None,
                                       headers={"Content-Type": "application/json"} if content else None)
        self._signer.sign(req, content)
        try:
            resp = self._http.send(req)
        except httpx.HTTPError as exc:
            raise ConnectionFailedError(codes.CLIENT_UNREACHABLE, f"cannot reach the gateway at "
                                        f"{self.credentials.url}: {exc}") from None
        try:
            doc = resp.json() if resp.content else None
        except json.JSONDecodeError:
            doc = None
        if resp.is_success:
            return doc
        if isinstance(doc, dict) and "code" in doc:
            raise error_for(resp.status_code, doc["code"], str(doc.get("reason", "")), str(doc.get("by", "gateway")))
        raise error_for(resp.status_code, codes.HTTP_STATUS.of(str(resp.status_code)), resp.reason_phrase or "no answer")

    def _as(self, model: type[M], doc: Any) -> M:
        try:
            return model.model_validate(doc)
        except ValidationError as exc:
            raise GatewayError(codes.CLIENT_ANSWER, f"the gateway's answer is not a {model.__name__}: {exc}") from None

    # --- requests ------------------------------------------------------------------------------

    def submit(self, request: Request, *, set: dict[str, str] | None = None, id: str | None = None) -> SubmitResult:
        """Submit ``request`` (a dict shaped like a request file, or its TOML text); ``set``
        overrides dotted keys (``{"object.0.count": "4"}``), ``id`` names it."""
        body = SubmitBody(**_request_fields(request), set=dict(set or {}), id=id)
        return self._as(SubmitResult, self.call("POST", "/requests", body))

    schedule_objects = submit  # Legion's name for it

    def list(self, user: str | None = None, state: str | None = None) -> list[RequestInfo]:
        """The requests the caller may see (their own; an administrator's: everyone's), oldest first."""
        return list(self._as(RequestList, self.call("GET", "/requests", params={"user": user, "state": state})).requests)

    def show(self, request_id: str) -> RequestInfo:
        """One request: its state, history, instances and the vetoes it met (``failures``)."""
        return self._as(RequestInfo, self.call("GET", f"/requests/{_seg(request_id)}"))

    def cancel(self, request_id: str, reason: str = "cancelled by its user") -> RequestInfo:
        return self._as(RequestInfo, self.call("POST", f"/requests/{_seg(request_id)}/cancel", CancelBody(reason=reason)))

    def cancel_many(self, ids: tuple[str, ...] | list[str] = (), *, user: str | None = None, state: str | None = None,
                    reason: str = "cancelled by its user") -> CancelResult:
        """Cancel ``ids``, or every request of ``user`` / in ``state`` the caller may cancel."""
        body = CancelBody(ids=tuple(ids), user=user, state=state, reason=reason)
        return self._as(CancelResult, self.call("POST", "/requests/cancel", body))

    def wait(self, request_id: str, *, timeout: float | None = None, poll_s: float = 0.5,
             until: tuple[str, ...] = tuple(FINAL_STATES)) -> RequestInfo:
        """Poll until the request is in one of ``until`` (default: ended); raises
        :class:`GatewayError` ``wait.timeout`` after ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        ended_at: float | None = None
        while True:
            info = self.show(request_id)
            if info.state in until:
                # an ended run's exit code reaches the book a moment after its request ends
                # (its host reports it on the next watch): wait up to RESULT_GRACE_S for it
                ended = info.state in FINAL_STATES
                ended_at = ended_at or time.monotonic()
                if (not ended or info.exit_code is not None or not info.instances or info.state == "cancelled"
                        or time.monotonic() - ended_at > RESULT_GRACE_S
                        or (deadline is not None and time.monotonic() >= deadline)):
                    return info
            if deadline is not None and time.monotonic() >= deadline:
                raise GatewayError(codes.WAIT_TIMEOUT, f"{request_id} is still {info.state} after {timeout:g} s")
            time.sleep(poll_s)

    def events(self, request_id: str, cursor: int = 0) -> list[StatusEvent]:
        """The request's status events after ``cursor`` (each event's ``seq`` is the next cursor)."""
        doc = self.call("GET", f"/requests/{_seg(request_id)}/events", params={"cursor": cursor})
        return list(self._as(EventList, doc).events)

    def logs(self, request_id: str) -> LogsResult:
        return self._as(LogsResult, self.call("GET", f"/requests/{_seg(request_id)}/logs"))

    # --- the system -----------------------------------------------------------------------------

    def query(self, mil: str, include_unavailable: bool = False) -> QueryResult:
        """A MIL query on the Collection, answered as the caller (only hosts they may use)."""
        return self._as(QueryResult, self.call("POST", "/query", QueryBody(mil=mil, include_unavailable=include_unavailable)))

    def get_candidate_placements(self, request: Request) -> ScheduleSuite:
        """The master and delta schedules ``request`` would get now, not enacted."""
        return self.explain(request).suite

    def explain(self, request: Request, hosts: tuple[str, ...] | list[str] = ()) -> PlanResult:
        """:meth:`get_candidate_placements`, and for each of ``hosts`` why it would or would not be used."""
        return self._as(PlanResult, self.call("POST", "/plan", PlanBody(**_request_fields(request), hosts=tuple(hosts))))

    def hosts(self) -> HostList:
        return self._as(HostList, self.call("GET", "/hosts"))

    def pools(self) -> PoolList:
        return self._as(PoolList, self.call("GET", "/pools"))

    def schedulers(self) -> SchedulerList:
        """Every scheduler of the system, what it serves and its queue (the default first)."""
        return self._as(SchedulerList, self.call("GET", "/schedulers"))

    def drain(self, host: str, reason: str) -> HostDrained:
        """Drain ``host``: it finishes its work and takes no new work (administrators)."""
        return self._as(HostDrained, self.call("POST", f"/hosts/{_seg(host)}/drain", DrainBody(reason=reason)))

    def reload(self, toml: str, source: str = "cluster") -> Reloaded:
        """Apply a cluster file's pools and schedulers to the running system, all or nothing (administrators)."""
        return self._as(Reloaded, self.call("POST", "/reload", ReloadBody(toml=toml, source=source)))

    def edit_pool(self, op: str, pool: dict[str, Any]) -> Reloaded:
        """``op`` (create, update, delete) one pool: its ``[[pool]]`` table, or for a delete its path (administrators)."""
        return self._as(Reloaded, self.call("POST", "/pools", PoolEditBody(op=op, pool=pool)))  # type: ignore[arg-type]

    def resume(self, host: str) -> HostDrained:
        """Let a drained ``host`` take new work again (administrators)."""
        return self._as(HostDrained, self.call("POST", f"/hosts/{_seg(host)}/resume"))

    def status(self) -> GatewayStatus:
        return self._as(GatewayStatus, self.call("GET", "/status"))

    def whoami(self) -> Caller:
        return self._as(Caller, self.call("GET", "/whoami"))

    def users(self) -> list[dict[str, Any]]:
        """Every user (administrators)."""
        return list(self.call("GET", "/users")["users"])

    def remove_user(self, name: str) -> None:
        """Remove ``name``: their next call is refused (administrators)."""
        self.call("DELETE", f"/users/{_seg(name)}")


def _seg(text: str) -> str:
    """``text`` as one path segment (a request id with a ``/`` cannot reach another route)."""
    return quote(text, safe="")


def _request_fields(request: Request) -> dict[str, Any]:
    if isinstance(request, str):
        return {"toml": request}
    if isinstance(request, dict):
        return {"request": request}
    raise TypeError(f"a request is a dict shaped like a request file or its TOML text, not {type(request).__name__}")


def _tls(c: Credentials) -> ssl.SSLContext | bool:
    """For an https gateway: trust exactly its certificate, once its fingerprint is the pinned one."""
    if not c.url.startswith("https://"):
        return True
    parts = urlsplit(c.url)
    try:
        pem = ssl.get_server_certificate((parts.hostname or "", parts.port or 443), timeout=10)
    except OSError as exc:
        raise ConnectionFailedError(codes.CLIENT_UNREACHABLE, f"cannot reach the gateway at {c.url}: {exc}") from None
    got = fingerprint(ssl.PEM_cert_to_DER_cert(pem))
    if got != c.fingerprint:
        raise ConnectionFailedError(codes.CLIENT_FINGERPRINT, f"the gateway at {c.url} shows certificate {got}, not the "
                                    f"pinned {c.fingerprint}: refusing to talk to it")
    ctx = ssl.create_default_context(cadata=pem)
    ctx.check_hostname = False  # the pinned certificate itself is the only trust anchor
    return ctx
