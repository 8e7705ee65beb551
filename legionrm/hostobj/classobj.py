"""The class object: creates instances on reserved hosts, with class-level policy.

Legion 8.2.2, step 3-5: the enactor calls ``create_instance(host, token)`` on
the class; the class checks that the placement is acceptable, then asks the
host to ``start_object`` with the token and the vault to use.  Both the class
and the host may veto (8.2.3).  A :class:`ClassObject` checks, in order: the
host is on its ``class_host_list`` (empty: any host), it is below
``max_instances``, its own veto (:meth:`admit_placement`, or an attached
:class:`ClassPolicy`), it can reach the host, the token was issued by that
host; then takes the vault space (when a vault token is given), then asks the
host, giving the vault space back if the host refuses.

:meth:`ClassObject.create_instances` does the same for a batch, asking each
host port (a host group carries many hosts) once for all its starts, so
placing a thousand instances costs a call per host group, not per instance.
"""

from __future__ import annotations

import fnmatch
import logging
import threading
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence

from legionrm import codes
from legionrm.hostobj.group import HostGroup
from legionrm.hostobj.policies import ADMIT, Verdict, ask_owner
from legionrm.mil import compile_query
from legionrm.models import (
    CreateRequest,
    Holder,
    ImplementationSpec,
    InstanceRef,
    Refusal,
    ReservationToken,
    Resources,
    StartRequest,
)

log = logging.getLogger(__name__)


class HostPort(Protocol):
    """Something that starts objects on a host: a HostObject, a HostGroup (routes
    by the token's issuer), or an actor adapter.

    A port may also offer ``start_objects(starts) -> answers`` (one call for
    a batch of :class:`StartRequest`, answers in order) and
    ``send_starts(starts) -> collect`` (the call sent now, its answers
    awaited by ``collect()``, so batches to several ports run at once); a
    class object uses the best one a port has."""

    def start_object(
        self, token: ReservationToken, class_name: str, holder: Holder, *, vault: str | None = ...,
        args: Mapping[str, Any] | None = ..., impl: str | None = ...,
    ) -> InstanceRef | Refusal: ...

    def stop_object(self, instance_id: str, reason: str = ...) -> Resources | Refusal: ...


class VaultPort(Protocol):
    def use(self, token: ReservationToken, host: str, holder: Holder) -> str | Refusal: ...

    def release(self, use_id: str, *, rollback: bool = False) -> Resources | Refusal: ...


Resolver = Mapping[str, Any] | Callable[[str], Any]


class ClassPolicy:
    """A class-level veto, configured as ``policy = "module:Class"`` in a ``[[class]]`` table."""

    @property
    def name(self) -> str:
        return type(self).__name__

    def admit_placement(self, cls: "ClassObject", host: str, vault: str | None, token: ReservationToken) -> Verdict:
        return ADMIT


class ClassObject:
    """A class object.  Thread-safe.

    ``hosts`` / ``vaults`` resolve a name to a port (a mapping or a function);
    ``implementation`` is the import path real hosts run; ``host_list`` holds
    shell patterns (Legion's class_host_list).
    """

    def __init__(
        self,
        name: str,
        *,
        hosts: Resolver | None = None,
        vaults: Resolver | None = None,
        implementation: str | None = None,
        host_list: Iterable[str] = (),
        max_instances: int | None = None,
        policy: ClassPolicy | None = None,
        implementations: Iterable[ImplementationSpec] = (),
    ) -> None:
        self.name = name
        self.implementation = implementation
        self.implementations = tuple(implementations)
        self.host_list = tuple(host_list)
        self.max_instances = max_instances
        self.policy = policy
        self._hosts = hosts or {}
        self._vaults = vaults or {}
        self._instances: dict[str, tuple[InstanceRef, Any, Any, str | None]] = {}  # id -> ref, host port, vault port, use id
        self._lock = threading.RLock()

    # --- owner hook -------------------------------------------------------------------------

    def admit_placement(self, host: str, vault: str | None, token: ReservationToken) -> Verdict:
        """The class's own veto of a placement.  Default: the policy, else admit."""
        return self.policy.admit_placement(self, host, vault, token) if self.policy else ADMIT

    # --- instances --------------------------------------------------------------------------

    def create_instance(
        self,
        host: str | HostPort,
        vault: str | VaultPort | None,
        token: ReservationToken,
        args: Mapping[str, Any] | None = None,
        *,
        vault_token: ReservationToken | None = None,
        holder: Holder | None = None,
    ) -> InstanceRef | Refusal:
        """Create an instance on ``host`` with the host's reservation ``token``.

        ``host``/``vault`` are names (resolved through the constructor's
        resolvers) or ports.  ``holder`` is who presents the token (default:
        the token's holder, as the enactor acts for them).  The vault the
        instance uses (what the class's veto sees and the host checks its
        pairing with) is ``vault``, else the issuer of ``vault_token``, else
        the one named in the host's token.  Not idempotent: each success is
        one more instance.  The batch of one of :meth:`create_instances`.
        """
        return self._create([_Ask(host, vault, token, args, vault_token, holder, False)])[0]

    def create_instances(self, items: Sequence[CreateRequest]) -> list[InstanceRef | Refusal]:
        """Create an instance for each item: one instance or refusal per item, in order.

        Each item is checked exactly as :meth:`create_instance` checks it (the
        same checks in the same order, the same codes); the accepted ones are
        started with one ``start_objects`` call per host port (a host group
        carries many hosts: one call for all of them), every port asked before
        any answer is awaited.  A refusal of one item never undoes another;
        the vault space taken for an item its host refuses is given back, and
        a port that raises or does not answer refuses its items with
        ``resource.error``.  Outcomes and final state are those of calling
        :meth:`create_instance` on each item in turn: an item whose check
        depends on how an earlier accepted item's start ends (``max_instances``
        reached counting the accepted ones, or the vault token an accepted
        item already uses) waits for those starts, in a further round.
        """
        return self._create([_Ask(r.host, r.vault, r.token, r.args, r.vault_token, r.holder, True) for r in items])

    def create_items(self, items: Sequence[Any]) -> list[InstanceRef | Refusal]:
        """:meth:`create_instances` of the in-process Enactor's create items
        (:class:`~legionrm.enactor.ports.CreateItem`: ``host``, ``host_token``, ``vault``,
        ``vault_token``, ``holder``, ``args``, every one valid already), with no
        :class:`CreateRequest` made for them; the same checks, answers and state."""
        return self._create([_Ask(r.host, r.vault, r.host_token, r.args, r.vault_token, r.holder, True) for r in items])

    def destroy_instance(self, instance_id: str, reason: str = "destroyed") -> bool:
        """Stop an instance on its host and release its vault space.  Idempotent."""
        with self._lock:
            item = self._instances.pop(instance_id, None)
        if item is None:
            return False
        ref, host_port, vault_port, use_id = item
        host_port.stop_object(ref.instance_id, reason)
        if vault_port is not None and use_id is not None:
            vault_port.release(use_id)
        return True

    def instance_stopped(self, instance_id: str) -> bool:
        """Forget an instance its host stopped (preempted, evicted, ended).  Idempotent."""
        with self._lock:
            return self._instances.pop(instance_id, None) is not None

    def list_instances(self) -> list[InstanceRef]:
        with self._lock:
            return [item[0] for item in self._instances.values()]

    def adopt(self, refs: Sequence[InstanceRef]) -> int:
        """Count again running instances of this class it did not create (a system booted anew on
        a kept request book: the hosts kept them, this object starts empty).  Their host is resolved
        by name (one it cannot reach is left out); their vault use is the vault's own record.
        Idempotent; returns how many it did not count before."""
        n = 0
        with self._lock:
            for ref in refs:
                if ref.class_name != self.name or ref.instance_id in self._instances:
                    continue
                port = self._resolve(self._hosts, ref.host, "host")
                if not isinstance(port, Refusal):
                    self._instances[ref.instance_id] = (ref, port, None, None)
                    n += 1
        return n

    def implementation_for(self, host_port: Any, host: str) -> str | None | Refusal:
        """The entry point an instance on ``host`` runs: the first of the
        class's implementations that fits the host's attributes (arch, OS,
        requirements), else ``class.no_implementation``; the class's single
        ``implementation`` when it lists none.  A host whose attributes
        cannot be read here (a remote port) gets the first implementation:
        the planner only chose hosts one fits."""
        if not self.implementations:
            return self.implementation
        attrs = _host_attributes(host_port, host)
        if attrs is None:
            return self.implementations[0].entry
        record = {**attrs, "name": host, "kind": "host"}
        for impl in self.implementations:
            if compile_query(impl.mil()).matches(record):
                return impl.entry
        kinds = ", ".join(f"{i.arch}/{i.os}" for i in self.implementations)
        return self._refuse(codes.CLASS_NO_IMPLEMENTATION, f"class {self.name} has no implementation for host {host!r} ({kinds})")

    # --- internals ----------------------------------------------------------------------------

    def _create(self, asks: Sequence["_Ask"]) -> list[InstanceRef | Refusal]:
        """Check, then start in rounds (see :meth:`create_instances`)."""
        out: list[InstanceRef | Refusal | None] = [None] * len(asks)
        with self._lock:
            i = 0
            while i < len(asks):
                wave: list[_Admitted] = []
                using: set[tuple[str, str]] = set()  # vault tokens this round's accepted items use
                while i < len(asks):
                    vt = asks[i].vault_token
                    vkey = None if vt is None else (vt.issuer, vt.token_id)
                    if wave and ((self.max_instances is not None and self._full(len(wave))) or vkey in using):
                        break  # its checks depend on how this round's starts end
                    got = self._admit(i, asks[i])
                    if isinstance(got, Refusal):
                        out[i] = got
                    else:
                        wave.append(got)
                        if vkey is not None:
                            using.add(vkey)
                    i += 1
                self._start(wave, out)
        return out  # type: ignore[return-value]

    def _full(self, pending: int) -> bool:
        return self.max_instances is not None and len(self._instances) + pending >= self.max_instances

    def _admit(self, index: int, ask: "_Ask") -> "_Admitted | Refusal":
        """The class's checks of one create, in order, and its vault space taken."""
        token, host, vault, vault_token = ask.token, ask.host, ask.vault, ask.vault_token
        holder = ask.holder or token.holder
        host_name = token.issuer if not isinstance(host, str) else host
        vault_name = vault if isinstance(vault, str) or vault is None else getattr(vault, "name", None)
        if vault_name is None and vault_token is not None:  # the vault whose space is taken is the one the host must pair with
            vault_name = vault_token.issuer
        if self.host_list and not any(fnmatch.fnmatchcase(host_name, p) for p in self.host_list):
            return self._refuse(codes.CLASS_HOST_LIST, f"host {host_name!r} is not on the host list of {self.name} ({', '.join(self.host_list)})")
        if self.max_instances is not None and self._full(0):  # (no limit: nothing to count)
            return self._refuse(codes.CLASS_MAX_INSTANCES, f"{self.name} already has {len(self._instances)} instances (max {self.max_instances})")
        hook = self.admit_placement
        if self.policy is not None or getattr(hook, "__func__", None) is not ClassObject.admit_placement:
            verdict = ask_owner("admit_placement", hook, host_name, vault_name, token, by=self.name)  # (else: nothing to ask)
            if isinstance(verdict, Refusal):
                return verdict
        host_port = self._resolve(self._hosts, host, "host")
        if isinstance(host_port, Refusal):
            return host_port
        if host_name != token.issuer:  # else a group port would route the start to the issuer, past the host list
            return self._refuse(codes.TOKEN_WRONG_ISSUER, f"token issued by {token.issuer!r} cannot create an instance on {host_name!r}")
        impl = self.implementation_for(host_port, host_name)  # before any vault space is taken
        if isinstance(impl, Refusal):
            return impl
        vault_port, use_id = None, None
        if vault_token is not None:
            vault_port = self._resolve(self._vaults, vault if vault is not None else vault_token.issuer, "vault")
            if isinstance(vault_port, Refusal):
                return vault_port
            try:
                use = vault_port.use(vault_token, host_name, holder)
            except Exception as exc:  # a vault that cannot answer refuses this item only
                return Refusal(code=codes.RESOURCE_ERROR, reason=f"vault {vault_token.issuer!r} did not answer: "
                               f"{type(exc).__name__}: {exc}"[:300], by=vault_token.issuer)
            if isinstance(use, Refusal):
                return use
            use_id = use
        args = ask.args or _NO_ARGS  # (a create request's parts are valid already: not checked again)
        if not ask.valid:  # create_instance's own arguments: checked (and read) as a start request takes them
            args = StartRequest(token=token, class_name=self.name, holder=holder, vault=vault_name, args=dict(args),
                                impl=impl).args
        return _Admitted(index, host_port, vault_port, use_id, token, self.name, holder, vault_name, args, impl)

    def _start(self, wave: Sequence["_Admitted"], out: list[InstanceRef | Refusal | None]) -> None:
        """Start a round's accepted items: one batch per host port, all sent before any is awaited."""
        by_port: dict[int, tuple[Any, list[_Admitted]]] = {}
        for a in wave:
            by_port.setdefault(id(a.host_port), (a.host_port, []))[1].append(a)
        sent: list[tuple[list[_Admitted], Callable[[], Sequence[InstanceRef | Refusal]]]] = []
        for port, items in by_port.values():
            try:
                sent.append((items, _send_starts(port, items)))
            except Exception as exc:  # noqa: BLE001 - could not even send: its items are refused below
                sent.append((items, _raiser(exc)))
        for items, collect in sent:
            try:
                answers: Sequence[InstanceRef | Refusal] = collect()
                error = f"answered {len(answers)} starts for {len(items)}"
            except Exception as exc:  # noqa: BLE001 - a host port that raised or timed out refuses its items only
                answers, error = [], f"{type(exc).__name__}: {exc}"
            for k, a in enumerate(items):
                host = a.token.issuer
                ref = answers[k] if len(answers) == len(items) else Refusal(
                    code=codes.RESOURCE_ERROR, reason=f"host {host!r} did not start the instance: {error}"[:300], by=host)
                if isinstance(ref, Refusal):
                    self._give_back(a)
                else:
                    self._instances[ref.instance_id] = (ref, a.host_port, a.vault_port, a.use_id)
                out[a.index] = ref

    def _give_back(self, a: "_Admitted") -> None:
        """The host said no: the vault space goes back and the vault token stays good."""
        if a.vault_port is None or a.use_id is None:
            return
        try:
            a.vault_port.release(a.use_id, rollback=True)
        except Exception:  # noqa: BLE001 - the vault token times out there anyway
            log.warning("class %s could not give vault use %s back", self.name, a.use_id, exc_info=True)


    def _resolve(self, resolver: Resolver, target: Any, kind: str) -> Any:
        if not isinstance(target, str):
            return target
        port = resolver(target) if callable(resolver) else resolver.get(target)
        if port is None:
            return Refusal(code=codes.RESOURCE_UNKNOWN, reason=f"class {self.name} cannot reach {kind} {target!r}", by=target)
        return port

    def _refuse(self, code: str, reason: str) -> Refusal:
        return Refusal(code=code, reason=reason, by=self.name)


@dataclass(slots=True)  # (not frozen: made once per create, and never changed)
class _Ask:
    """One create as :meth:`ClassObject.create_instance` takes it."""

    host: str | HostPort
    vault: str | VaultPort | None
    token: ReservationToken
    args: Mapping[str, Any] | None
    vault_token: ReservationToken | None
    holder: Holder | None
    valid: bool  # its values are a CreateRequest's (validated), not create_instance's arguments


_NO_ARGS: Mapping[str, Any] = MappingProxyType({})
"""No arguments (read-only: one empty mapping serves every start)."""


@dataclass(slots=True)  # (not frozen: made once per create, and never changed)
class _Admitted:
    """A create the class accepted (its vault space taken), waiting for its host's start:
    the start's fields under a :class:`StartRequest`'s names, so a host group in this
    process reads them as it reads a start request (:meth:`request` makes the model,
    for a port across a process boundary)."""

    index: int
    host_port: Any
    vault_port: Any
    use_id: str | None
    token: ReservationToken
    class_name: str
    holder: Holder
    vault: str | None
    args: Mapping[str, Any]
    impl: str | None

    def request(self) -> StartRequest:
        """The start as a model (its values are valid already: not checked again)."""
        return StartRequest.trusted(token=self.token, class_name=self.class_name, holder=self.holder, vault=self.vault,
                                    args=dict(self.args), impl=self.impl)


def _send_starts(port: Any, starts: list[_Admitted]) -> Callable[[], Sequence[InstanceRef | Refusal]]:
    """Ask ``port`` to start ``starts``; returns what waits for the answers
    (see :class:`HostPort`): its ``send_starts``, else one ``start_objects``
    call, else one ``start_object`` per start.  A host group in this process
    is given the starts themselves, any other port :class:`StartRequest` models."""
    send = getattr(port, "send_starts", None)
    if callable(send):
        return send([s.request() for s in starts])  # type: ignore[no-any-return]
    if isinstance(port, HostGroup):
        answers = port.start_objects(starts)
        return lambda: answers
    many = getattr(port, "start_objects", None)
    if callable(many):
        answers = many([s.request() for s in starts])
        return lambda: answers
    return lambda: [_start_one(port, s) for s in starts]


def _start_one(port: Any, s: _Admitted) -> InstanceRef | Refusal:
    """One ``start_object``; a port that raises refuses this start only (the others it started stand)."""
    try:
        return port.start_object(s.token, s.class_name, s.holder, vault=s.vault, args=s.args, impl=s.impl)  # type: ignore[no-any-return]
    except Exception as exc:  # noqa: BLE001
        host = s.token.issuer
        return Refusal(code=codes.RESOURCE_ERROR, reason=f"host {host!r} raised: {type(exc).__name__}: {exc}"[:300], by=host)


def _raiser(exc: Exception) -> Callable[[], Sequence[InstanceRef | Refusal]]:
    def collect() -> Sequence[InstanceRef | Refusal]:
        raise exc

    return collect


def _host_attributes(port: Any, host: str) -> dict[str, Any] | None:
    """The attributes of ``host`` through its port (a host object, or a group
    that holds it); None when the port cannot say (a remote adapter)."""
    try:
        obj = port.get(host) if callable(getattr(port, "get", None)) else port
        record = getattr(obj, "record", None)
        return dict(record().attributes) if callable(record) else None
    except Exception:  # noqa: BLE001 - an adapter that cannot answer: the planner's choice stands
        return None
