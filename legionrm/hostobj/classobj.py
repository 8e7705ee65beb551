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
"""

from __future__ import annotations

import fnmatch
import threading
from typing import Any, Callable, Iterable, Mapping, Protocol

from legionrm.hostobj import codes
from legionrm.hostobj.policies import ADMIT, Verdict, ask_owner
from legionrm.mil import compile_query
from legionrm.models import (
    Holder,
    ImplementationSpec,
    InstanceRef,
    Refusal,
    ReservationToken,
    Resources,
)


class HostPort(Protocol):
    """Something that starts objects on a host: a HostObject, a HostGroup (routes
    by the token's issuer), or an actor adapter."""

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
        one more instance.
        """
        holder = holder or token.holder
        host_name = token.issuer if not isinstance(host, str) else host
        vault_name = vault if isinstance(vault, str) or vault is None else getattr(vault, "name", None)
        if vault_name is None and vault_token is not None:  # the vault whose space is taken is the one the host must pair with
            vault_name = vault_token.issuer
        with self._lock:
            if self.host_list and not any(fnmatch.fnmatchcase(host_name, p) for p in self.host_list):
                return self._refuse(codes.CLASS_HOST_LIST, f"host {host_name!r} is not on the host list of {self.name} ({', '.join(self.host_list)})")
            if self.max_instances is not None and len(self._instances) >= self.max_instances:
                return self._refuse(codes.CLASS_MAX_INSTANCES, f"{self.name} already has {len(self._instances)} instances (max {self.max_instances})")
            verdict = ask_owner("admit_placement", self.admit_placement, host_name, vault_name, token, by=self.name)
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
                use = vault_port.use(vault_token, host_name, holder)
                if isinstance(use, Refusal):
                    return use
                use_id = use
            ref = host_port.start_object(token, self.name, holder, vault=vault_name, args=dict(args or {}), impl=impl)
            if isinstance(ref, Refusal):
                if vault_port is not None and use_id is not None:
                    vault_port.release(use_id, rollback=True)  # the host said no: the vault token stays good
                return ref
            self._instances[ref.instance_id] = (ref, host_port, vault_port, use_id)
            return ref

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

    def _resolve(self, resolver: Resolver, target: Any, kind: str) -> Any:
        if not isinstance(target, str):
            return target
        port = resolver(target) if callable(resolver) else resolver.get(target)
        if port is None:
            return Refusal(code=codes.RESOURCE_UNKNOWN, reason=f"class {self.name} cannot reach {kind} {target!r}", by=target)
        return port

    def _refuse(self, code: str, reason: str) -> Refusal:
        return Refusal(code=code, reason=reason, by=self.name)


def _host_attributes(port: Any, host: str) -> dict[str, Any] | None:
    """The attributes of ``host`` through its port (a host object, or a group
    that holds it); None when the port cannot say (a remote adapter)."""
    try:
        obj = port.get(host) if callable(getattr(port, "get", None)) else port
        record = getattr(obj, "record", None)
        return dict(record().attributes) if callable(record) else None
    except Exception:  # noqa: BLE001 - an adapter that cannot answer: the planner's choice stands
        return None
