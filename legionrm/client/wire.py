"""The gateway's calls as JSON documents: one signed HTTP call each, no pydantic.

:class:`Wire` holds the route table: each user verb is one method answering
the gateway's JSON as it came (a ``dict``, or a list of them).  The CLI prints
from these documents (:mod:`legionrm.cli.front`), so ``legionrm list`` imports
no model; :class:`~legionrm.client.client.Client` turns the same documents
into the gateway's pydantic models for Python programs.

HTTP is :mod:`legionrm.client.http11` (not ``http.client``, whose import of
the ``email`` package is a third of a CLI call): one keep-alive connection
per thread (a connection the gateway closed while idle is opened anew before
the next call), each call signed (:mod:`legionrm.client.signing`).  An https
gateway is reached only if its certificate's SHA-256 fingerprint is the one
pinned in the credentials.  A refusal raises a
:class:`~legionrm.client.errors.GatewayError` subclass carrying its code.
"""

from __future__ import annotations

import _thread  # threading's own base (get_ident, allocate_lock): importing threading costs a CLI call more
import json
import os
import select
import time

from legionrm import codes
from legionrm.client.credentials import Credentials, find, fingerprint
from legionrm.client.errors import ConnectionFailedError, CredentialsError, GatewayError, error_for
from legionrm.client.http11 import Connection, query, quote, split_url
from legionrm.client.signing import RequestSigner, load_key
from legionrm.protocol import API_PREFIX, AS_HEADER

TYPE_CHECKING = False  # typing's, without importing typing: a CLI call never loads it
if TYPE_CHECKING:
    import ssl
    from collections.abc import Callable
    from typing import Any, Self

Doc = dict[str, "Any"]
Request = dict[str, "Any"] | str

ENDED = ("completed", "failed", "cancelled", "node_lost", "preempted")
"""The states a request ends in (:data:`legionrm.models.FINAL_STATES`; a test holds them equal)."""
RESULT_GRACE_S = 10.0
"""How long ``wait`` waits, after a request ended, for its runs' exit code."""


class Wire:
    """A user's connection to the gateway named in their credentials (see the module doc).
    ``as_user``: an administrator's calls made as that user (refused for anyone else)."""

    def __init__(self, credentials: Credentials, *, as_user: str | None = None, timeout: float = 60.0,
                 sodium: bool = False) -> None:
        self.credentials, self.as_user, self.timeout = credentials, as_user, timeout
        self.user = credentials.user
        self._signer = RequestSigner(credentials.user, load_key(credentials.private_key_pem, credentials.path),
                                     sodium=sodium)  # see RequestSigner
        try:
            scheme, host, port, path = split_url(credentials.url)
        except ValueError as exc:
            raise CredentialsError(f"{credentials.path or 'credentials'}: 'url' is not a gateway's: {exc}") from None
        self._https = scheme == "https"
        self._host, self._port = host or "127.0.0.1", port or (443 if self._https else 80)
        self._prefix = path.rstrip("/") + API_PREFIX
        self._tls = _pinned(credentials) if self._https else None
        self._conns: dict[int, Connection] = {}  # each thread's connection, by its thread's id
        self._lock = _thread.allocate_lock()

    @classmethod
    def from_credentials(cls, path: str | os.PathLike[str] | None = None, **kw: Any) -> Self:
        """The connection of the credentials file at ``path``, or found where a client looks (see
        :func:`legionrm.client.credentials.find`)."""
        return cls(find(path), **kw)

    def close(self) -> None:
        """Close every thread's connection (a later call opens a new one)."""
        with self._lock:
            conns, self._conns = list(self._conns.values()), {}
        for c in conns:
            c.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # --- one call ----------------------------------------------------------------------------

    def call(self, method: str, path: str, body: Any = None, params: dict[str, Any] | None = None, *,
             read: Callable[[bytes], Any] | None = None) -> Any:
        """One signed call of ``path`` (under ``/api/v1``); the answer's JSON, or the error it carries
        raised.  ``body``: JSON bytes, a JSON-able mapping, or a pydantic model (sent without its defaults).
        ``read``: what a success's body is made into instead of its JSON (the typed Client validates
        the bytes as its model in one pass, not ``json.loads`` and then the model)."""
        content = _content(body)
        q = query({k: v for k, v in (params or {}).items() if v is not None})
        target = self._prefix + path + (f"?{q}" if q else "")
        headers = {"Accept": "application/json", **self._signer.headers(method, target, content, self.as_user)}
        if content:
            headers["Content-Type"] = "application/json"
        if self.as_user:
            headers[AS_HEADER] = self.as_user
        conn = self._connection()
        try:
            resp = conn.request(method, target, content, headers)
        except OSError as exc:
            self._forget(conn)
            raise ConnectionFailedError(codes.CLIENT_UNREACHABLE, f"cannot reach the gateway at "
                                        f"{self.credentials.url}: {exc or type(exc).__name__}") from None
        if resp.will_close:
            self._forget(conn)
        if read is not None and 200 <= resp.status < 300:
            return read(resp.body)
        try:
            doc = json.loads(resp.body) if resp.body else None
        except ValueError:
            doc = None
        if 200 <= resp.status < 300:
            return doc
        if isinstance(doc, dict) and "code" in doc:
            raise error_for(resp.status, doc["code"], str(doc.get("reason", "")), str(doc.get("by", "gateway")))
        raise error_for(resp.status, codes.HTTP_STATUS.of(str(resp.status)), resp.reason or "no answer")

    def _connection(self) -> Connection:
        # a thread's id may be a finished thread's: its connection is idle, this thread may take it
        me = _thread.get_ident()
        conn = self._conns.get(me)
        if conn is not None and (conn.sock is None or select.select([conn.sock], [], [], 0)[0]):
            self._forget(conn)  # closed (by its answer), or readable while idle: the gateway closed it
            conn = None
        if conn is None:
            conn = Connection(self._host, self._port, timeout=self.timeout, tls=self._tls)
            with self._lock:
                self._conns[me] = conn
        return conn

    def _forget(self, conn: Connection) -> None:
        conn.close()
        with self._lock:
            for k in [k for k, c in self._conns.items() if c is conn]:
                del self._conns[k]

    # --- requests (each answers the gateway's JSON) ---------------------------------------------

    def submit(self, request: Request, *, set: dict[str, str] | None = None, id: str | None = None,
               read: Callable[[bytes], Any] | None = None) -> Doc:
        """``POST /requests``: a ``SubmitResult`` (``read``: see :meth:`call`)."""
        body: Doc = {**request_fields(request), **({"set": dict(set)} if set else {}), **({"id": id} if id else {})}
        return self.call("POST", "/requests", body, read=read)  # type: ignore[no-any-return]

    def list(self, user: str | None = None, state: str | None = None, *, all: bool = False,
             limit: int | None = None, cursor: str | None = None) -> list[Doc]:
        """``GET /requests``: each a ``RequestInfo``, oldest first (one page: see :meth:`list_page`)."""
        return list(self.list_page(user, state, all=all, limit=limit, cursor=cursor)["requests"])

    def list_page(self, user: str | None = None, state: str | None = None, *, all: bool = False,
                  limit: int | None = None, cursor: str | None = None, read: Callable[[bytes], Any] | None = None) -> Doc:
        """``GET /requests?all=&limit=&cursor=``: a ``RequestList``, the live and recent requests
        (``all``: every one the history keeps), at most ``limit`` after ``cursor``; its ``next`` is
        the cursor of the page after it (None: no more)."""
        params = {"user": user, "state": state, "all": "1" if all else None, "limit": limit, "cursor": cursor}
        return self.call("GET", "/requests", params=params, read=read)  # type: ignore[no-any-return]

    def show(self, request_id: str, read: Callable[[bytes], Any] | None = None) -> Doc:
        """``GET /requests/{id}``: a ``RequestInfo`` (``read``: see :meth:`call`)."""
        return self.call("GET", f"/requests/{segment(request_id)}", read=read)  # type: ignore[no-any-return]

    def cancel(self, request_id: str, reason: str = "cancelled by its user", read: Callable[[bytes], Any] | None = None
               ) -> Doc:
        """``POST /requests/{id}/cancel``: a ``RequestInfo`` (``read``: see :meth:`call`)."""
        return self.call("POST", f"/requests/{segment(request_id)}/cancel", {"reason": reason},  # type: ignore[no-any-return]
                         read=read)

    def cancel_many(self, ids: tuple[str, ...] | list[str] = (), *, user: str | None = None, state: str | None = None,
                    reason: str = "cancelled by its user") -> Doc:
        """``POST /requests/cancel``: a ``CancelResult``."""
        body = {"ids": list(ids), "user": user, "state": state, "reason": reason}
        return self.call("POST", "/requests/cancel", {k: v for k, v in body.items() if v})  # type: ignore[no-any-return]

    def wait(self, request_id: str, *, timeout: float | None = None, poll_s: float = 0.5,
             until: tuple[str, ...] = ENDED) -> Doc:
        """Poll until the request is in one of ``until`` (default: ended); raises
        :class:`GatewayError` ``wait.timeout`` after ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        ended_at: float | None = None
        while True:
            info = self.show(request_id)
            if info["state"] in until:
                # an ended run's exit code reaches the book a moment after its request ends
                # (its host reports it on the next watch): wait up to RESULT_GRACE_S for it
                ended = info["state"] in ENDED
                ended_at = ended_at or time.monotonic()
                if (not ended or info.get("exit_code") is not None or not info.get("instances")
                        or info["state"] == "cancelled" or time.monotonic() - ended_at > RESULT_GRACE_S
                        or (deadline is not None and time.monotonic() >= deadline)):
                    return info
            if deadline is not None and time.monotonic() >= deadline:
                raise GatewayError(codes.WAIT_TIMEOUT, f"{request_id} is still {info['state']} after {timeout:g} s")
            time.sleep(poll_s)

    def events(self, request_id: str, cursor: int = 0) -> list[Doc]:
        """The request's status events after ``cursor`` (each event's ``seq`` is the next cursor)."""
        return list(self.call("GET", f"/requests/{segment(request_id)}/events", params={"cursor": cursor})["events"])

    def logs(self, request_id: str, instance: int | str | None = None) -> Doc:
        """``GET /requests/{id}/logs[?instance=N|ID]``: ``{"id", "stdout", "stderr"}`` of one of its
        instances (a number from 0 in start order, or an id; default its only one)."""
        return self.call("GET", f"/requests/{segment(request_id)}/logs",  # type: ignore[no-any-return]
                         params={"instance": instance})

    def history(self, user: str | None = None, since: float | None = None, until: float | None = None,
                state: str | None = None) -> list[Doc]:
        """``GET /history``: the finished instances' accounting records (the caller's own; an
        administrator's: everyone's, or ``user``'s), by end time."""
        doc = self.call("GET", "/history", params={"user": user, "since": since, "until": until, "state": state})
        return list(doc["records"])

    # --- the system -----------------------------------------------------------------------------

    def query(self, mil: str, include_unavailable: bool = False) -> Doc:
        body: Doc = {"mil": mil, **({"include_unavailable": True} if include_unavailable else {})}
        return self.call("POST", "/query", body)  # type: ignore[no-any-return]

    def explain(self, request: Request, hosts: tuple[str, ...] | list[str] = ()) -> Doc:
        """``POST /plan``: a ``PlanResult``."""
        return self.call("POST", "/plan", {**request_fields(request), **({"hosts": list(hosts)} if hosts else {})})  # type: ignore[no-any-return]

    def hosts(self) -> Doc:
        return self.call("GET", "/hosts")  # type: ignore[no-any-return]

    def pools(self) -> Doc:
        return self.call("GET", "/pools")  # type: ignore[no-any-return]

    def status(self) -> Doc:
        return self.call("GET", "/status")  # type: ignore[no-any-return]

    def schedulers(self) -> Doc:
        """``GET /schedulers``: a ``SchedulerList``, the default first."""
        return self.call("GET", "/schedulers")  # type: ignore[no-any-return]

    def drain(self, host: str, reason: str) -> Doc:
        """``POST /hosts/{name}/drain``: a ``HostDrained`` (administrators)."""
        return self.call("POST", f"/hosts/{segment(host)}/drain", {"reason": reason})  # type: ignore[no-any-return]

    def resume(self, host: str) -> Doc:
        """``POST /hosts/{name}/resume``: a ``HostDrained`` (administrators)."""
        return self.call("POST", f"/hosts/{segment(host)}/resume")  # type: ignore[no-any-return]

    def reload(self, toml: str, source: str = "cluster") -> Doc:
        """``POST /reload``: a ``Reloaded``, the changes made (administrators)."""
        return self.call("POST", "/reload", {"toml": toml, "source": source})  # type: ignore[no-any-return]

    def edit_pool(self, op: str, pool: dict[str, Any]) -> Doc:
        """``POST /pools``: create, update or delete one pool; a ``Reloaded`` (administrators)."""
        return self.call("POST", "/pools", {"op": op, "pool": pool})  # type: ignore[no-any-return]

    def whoami(self) -> Doc:
        return self.call("GET", "/whoami")  # type: ignore[no-any-return]

    def users(self) -> list[Doc]:
        """Every user (administrators)."""
        return list(self.call("GET", "/users")["users"])

    def remove_user(self, name: str) -> None:
        """Remove ``name``: their next call is refused (administrators)."""
        self.call("DELETE", f"/users/{segment(name)}")


def segment(text: str) -> str:
    """``text`` as one path segment (a request id with a ``/`` cannot reach another route)."""
    return quote(text)


def request_fields(request: Request) -> Doc:
    """A submit's or plan's request: ``{"toml": text}`` or ``{"request": tables}``."""
    if isinstance(request, str):
        return {"toml": request}
    if isinstance(request, dict):
        return {"request": request}
    raise TypeError(f"a request is a dict shaped like a request file or its TOML text, not {type(request).__name__}")


def _content(body: Any) -> bytes:
    if body is None:
        return b""
    if isinstance(body, bytes):
        return body
    if hasattr(body, "model_dump_json"):  # a pydantic model (the typed Client's bodies)
        return str(body.model_dump_json(exclude_defaults=True)).encode()
    return json.dumps(body, separators=(",", ":")).encode()


def _pinned(c: Credentials) -> ssl.SSLContext:
    """For an https gateway: trust exactly its certificate, once its fingerprint is the pinned one."""
    import ssl  # here: an http gateway's call (127.0.0.1, the CLI on the head) does not pay for it

    _, host, port, _ = split_url(c.url)
    try:
        pem = ssl.get_server_certificate((host, port or 443), timeout=10)
    except OSError as exc:
        raise ConnectionFailedError(codes.CLIENT_UNREACHABLE, f"cannot reach the gateway at {c.url}: {exc}") from None
    got = fingerprint(ssl.PEM_cert_to_DER_cert(pem))
    if got != c.fingerprint:
        raise ConnectionFailedError(codes.CLIENT_FINGERPRINT, f"the gateway at {c.url} shows certificate {got}, not the "
                                    f"pinned {c.fingerprint}: refusing to talk to it")
    ctx = ssl.create_default_context(cadata=pem)
    ctx.check_hostname = False  # the pinned certificate itself is the only trust anchor
    return ctx
