"""The Python client: every user verb as one signed HTTP call to the gateway, its answer typed.

::

    from legionrm import Client
    c = Client.from_credentials()           # --credentials, $LEGIONRM_CREDENTIALS, ~/.legionrm/credentials
    r = c.submit({"object": [{"class_name": "Worker", "count": 2, "cpus": 1}]})
    c.show(r.id).state; c.wait(r.id); c.cancel(r.id)

The calls are :class:`~legionrm.client.wire.Wire`'s (signed, keep-alive, the
https gateway's certificate pinned); a :class:`Client` makes each answer the
gateway's pydantic model (:mod:`legionrm.models.api`).  A refusal raises a
:class:`~legionrm.client.errors.GatewayError` subclass carrying its code.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Self, TypeVar

from pydantic import BaseModel, ValidationError

from legionrm import codes
from legionrm.client.credentials import Credentials, find
from legionrm.client.errors import GatewayError
from legionrm.client.wire import Request, Wire, segment
from legionrm.models.api import (
    Caller,
    CancelResult,
    GatewayStatus,
    HostDrained,
    HostList,
    LogsResult,
    PlanResult,
    PoolList,
    QueryResult,
    Reloaded,
    RequestList,
    SchedulerList,
    SubmitResult,
    UserAddBody,
    UserAdded,
    UserList,
    UserRemoved,
    UserRow,
)
from legionrm.models.priority import PrioReport, ShareReport, UpdateBody
from legionrm.models.requests import FINAL_STATES, RequestInfo, StatusEvent
from legionrm.models.work import AccountRecord
from legionrm.models.schedules import ScheduleSuite

M = TypeVar("M", bound=BaseModel)


def _not_a(model: type[BaseModel], exc: ValidationError) -> GatewayError:
    """The refusal of an answer that is not a ``model`` (the gateway and this client disagree)."""
    return GatewayError(codes.CLIENT_ANSWER, f"the gateway's answer is not a {model.__name__}: {exc}")


class Client:
    """A user's connection to the gateway named in their credentials (see the module doc).
    ``as_user``: an administrator's calls made as that user (refused for anyone else)."""

    def __init__(self, credentials: Credentials, *, as_user: str | None = None, timeout: float = 60.0) -> None:
        self.wire = Wire(credentials, as_user=as_user, timeout=timeout, sodium=True)  # long-lived: libsodium signs
        self.credentials, self.as_user, self.user = credentials, as_user, credentials.user

    @classmethod
    def from_credentials(cls, path: str | os.PathLike[str] | None = None, **kw: Any) -> Self:
        """The client of the credentials file at ``path``, or found where a client looks (see
        :func:`legionrm.client.credentials.find`)."""
        return cls(find(path), **kw)

    def close(self) -> None:
        self.wire.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def call(self, method: str, path: str, body: BaseModel | None = None, params: dict[str, Any] | None = None) -> Any:
        """One signed call; the answer's JSON, or the error it carries raised (:meth:`Wire.call`)."""
        return self.wire.call(method, path, body, params)

    def _as(self, model: type[M], doc: Any) -> M:
        try:
            return model.model_validate(doc)
        except ValidationError as exc:
            raise _not_a(model, exc) from None

    def _reader(self, model: type[M]) -> Callable[[bytes], M]:
        """A success's body read straight as ``model`` (one pass of pydantic's JSON parser: a third of
        what ``json.loads`` and then :meth:`_as` cost), refused as :meth:`_as` refuses."""
        def read(body: bytes) -> M:
            try:
                return model.model_validate_json(body)
            except ValidationError as exc:
                raise _not_a(model, exc) from None
        return read

    # --- requests ------------------------------------------------------------------------------

    def submit(self, request: Request, *, set: dict[str, str] | None = None, id: str | None = None) -> SubmitResult:
        """Submit ``request`` (a dict shaped like a request file, or its TOML text); ``set``
        overrides dotted keys (``{"object.0.count": "4"}``), ``id`` names it."""
        return self.wire.submit(request, set=set, id=id, read=self._reader(SubmitResult))  # type: ignore[return-value]

    schedule_objects = submit  # Legion's name for it

    def list(self, user: str | None = None, state: str | None = None, *, all: bool = False,
             limit: int | None = None, cursor: str | None = None) -> list[RequestInfo]:
        """The requests the caller may see (their own; an administrator's: everyone's), oldest first:
        the live and recent ones (``all``: every one the history keeps); one page of them (see :meth:`list_page`)."""
        return list(self.list_page(user, state, all=all, limit=limit, cursor=cursor).requests)

    def list_page(self, user: str | None = None, state: str | None = None, *, all: bool = False,
                  limit: int | None = None, cursor: str | None = None) -> RequestList:
        """One page of :meth:`list`: at most ``limit`` requests after ``cursor``; its ``next`` is
        the cursor of the page after it (None: no more)."""
        return self.wire.list_page(user, state, all=all, limit=limit, cursor=cursor,  # type: ignore[return-value]
                                   read=self._reader(RequestList))

    def show(self, request_id: str) -> RequestInfo:
        """One request: its state, history, instances and the vetoes it met (``failures``)."""
        return self.wire.show(request_id, read=self._reader(RequestInfo))  # type: ignore[return-value]

    def cancel(self, request_id: str, reason: str = "cancelled by its user") -> RequestInfo:
        return self.wire.cancel(request_id, reason, read=self._reader(RequestInfo))  # type: ignore[return-value]

    def cancel_many(self, ids: tuple[str, ...] | list[str] = (), *, user: str | None = None, state: str | None = None,
                    reason: str = "cancelled by its user") -> CancelResult:
        """Cancel ``ids``, or every request of ``user`` / in ``state`` the caller may cancel."""
        return self._as(CancelResult, self.wire.cancel_many(ids, user=user, state=state, reason=reason))

    def wait(self, request_id: str, *, timeout: float | None = None, poll_s: float = 0.5,
             until: tuple[str, ...] = tuple(FINAL_STATES)) -> RequestInfo:
        """Poll until the request is in one of ``until`` (default: ended); raises
        :class:`GatewayError` ``wait.timeout`` after ``timeout`` seconds."""
        return self._as(RequestInfo, self.wire.wait(request_id, timeout=timeout, poll_s=poll_s, until=until))

    def events(self, request_id: str, cursor: int = 0) -> list[StatusEvent]:
        """The request's status events after ``cursor`` (each event's ``seq`` is the next cursor)."""
        return [self._as(StatusEvent, d) for d in self.wire.events(request_id, cursor)]

    def logs(self, request_id: str, instance: int | str | None = None) -> LogsResult:
        """A request's output (the tail its node's runner kept) of its ``instance`` (a number from 0
        in start order, or an id; default its only one)."""
        return self._as(LogsResult, self.wire.logs(request_id, instance))

    def history(self, user: str | None = None, since: float | None = None, until: float | None = None,
                state: str | None = None) -> list[AccountRecord]:
        """Finished instances' accounting records that ended in ``[since, until]`` (seconds since
        the epoch), by end time: the caller's own (an administrator's: everyone's, or ``user``'s)."""
        return [self._as(AccountRecord, d) for d in self.wire.history(user, since, until, state)]

    # --- the queue --------------------------------------------------------------------------------

    def hold(self, request_id: str) -> RequestInfo:
        """Hold a pending request: it waits, unconsidered, until released."""
        return self._as(RequestInfo, self.call("POST", f"/requests/{segment(request_id)}/hold"))

    def release(self, request_id: str) -> RequestInfo:
        return self._as(RequestInfo, self.call("POST", f"/requests/{segment(request_id)}/release"))

    def update(self, request_id: str, *, priority: int | None = None, qos: str | None = None,
               clear_priority: bool = False) -> RequestInfo:
        """Set a pending request's fixed priority or its QoS (administrators)."""
        body = UpdateBody(priority=priority, qos=qos, clear_priority=clear_priority)
        return self._as(RequestInfo, self.call("POST", f"/requests/{segment(request_id)}/update", body))

    def top(self, request_id: str) -> RequestInfo:
        """Put a pending request first (administrators)."""
        return self._as(RequestInfo, self.call("POST", f"/requests/{segment(request_id)}/top"))

    def share(self) -> ShareReport:
        """The fair-share tree, as ``sshare`` shows it."""
        return self._as(ShareReport, self.call("GET", "/share"))

    def prio(self) -> PrioReport:
        """Each pending request's priority factors, as ``sprio`` shows them."""
        return self._as(PrioReport, self.call("GET", "/prio"))

    # --- the system -----------------------------------------------------------------------------

    def query(self, mil: str, include_unavailable: bool = False) -> QueryResult:
        """A MIL query on the Collection, answered as the caller (only hosts they may use)."""
        return self._as(QueryResult, self.wire.query(mil, include_unavailable))

    def get_candidate_placements(self, request: Request) -> ScheduleSuite:
        """The master and delta schedules ``request`` would get now, not enacted."""
        return self.explain(request).suite

    def explain(self, request: Request, hosts: tuple[str, ...] | list[str] = ()) -> PlanResult:
        """:meth:`get_candidate_placements`, and for each of ``hosts`` why it would or would not be used."""
        return self._as(PlanResult, self.wire.explain(request, hosts))

    def hosts(self) -> HostList:
        return self._as(HostList, self.wire.hosts())

    def pools(self) -> PoolList:
        return self._as(PoolList, self.wire.pools())

    def schedulers(self) -> SchedulerList:
        """Every scheduler of the system, what it serves and its queue (the default first)."""
        return self._as(SchedulerList, self.wire.schedulers())

    def drain(self, host: str, reason: str) -> HostDrained:
        """Drain ``host``: it finishes its work and takes no new work (administrators)."""
        return self._as(HostDrained, self.wire.drain(host, reason))

    def resume(self, host: str) -> HostDrained:
        """Let a drained ``host`` take new work again (administrators)."""
        return self._as(HostDrained, self.wire.resume(host))

    def reload(self, toml: str, source: str = "cluster") -> Reloaded:
        """Apply a cluster file's pools and schedulers to the running system, all or nothing (administrators)."""
        return self._as(Reloaded, self.wire.reload(toml, source))

    def edit_pool(self, op: str, pool: dict[str, Any]) -> Reloaded:
        """``op`` (create, update, delete) one pool: its ``[[pool]]`` table, or for a delete its path (administrators)."""
        return self._as(Reloaded, self.wire.edit_pool(op, pool))

    def status(self) -> GatewayStatus:
        return self._as(GatewayStatus, self.wire.status())

    def whoami(self) -> Caller:
        return self._as(Caller, self.wire.whoami())

    # --- users (administrators) ---------------------------------------------------------------------

    def users(self) -> list[UserRow]:
        """Every user (administrators)."""
        return list(self._as(UserList, self.call("GET", "/users")).users)

    def add_user(self, name: str, *, groups: tuple[str, ...] | list[str] = (), roles: tuple[str, ...] | list[str] = ("user",),
                 os_user: str | None = None) -> UserAdded:
        """Add ``name``; the gateway writes their credentials file in the service's home and says where."""
        body = UserAddBody(name=name, groups=tuple(groups), roles=tuple(roles), os_user=os_user)
        return self._as(UserAdded, self.call("POST", "/users", body))

    def remove_user(self, name: str) -> UserRemoved:
        """Remove ``name``: their next call is refused (administrators)."""
        return self._as(UserRemoved, self.call("DELETE", f"/users/{segment(name)}"))
