"""The host object: reservations of cpus, memory, gpus and custom kinds, and running instances.

A :class:`HostObject` is Legion's host object as a plain, thread-safe Python
object.  Owners customise it by subclassing and overriding the narrow hooks
(:meth:`admit_reservation`, :meth:`admit_start`, :meth:`attributes`) or by
attaching a ready-made :mod:`~legionrm.hostobj.policies` policy; the base checks
(capacity, calendar, every token rule) always run first and cannot be skipped.

``start_object`` checks, in order: the token (issuer, authentic: the granted one or signed here, known,
holder, class, cancelled, expired, used, in use, not yet started), the vault
the instance would use is paired with this host, then the owner's ``admit_start`` (a host "is free to refuse ... at any point"), then
launches.  A simulated host launches nothing, but for ``Command`` work when
it has a runner (``work``): that runs as its owner's OS account, in a
process of its own (:mod:`legionrm.hostobj.work`); the instance ends when
the process ends, and the host keeps its result (:meth:`HostObject.work_results`)
and output (:meth:`HostObject.work_output`).  :class:`RayNodeHost` starts
a real Ray actor for other classes by overriding :meth:`_launch` and :meth:`_halt`.
"""

from __future__ import annotations

import collections
import fnmatch
import itertools
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from legionrm import codes
from legionrm.hostobj import tokens
from legionrm.heartbeat import OWNER_MARK
from legionrm.hostobj.owners.policy import ADMIT, Verdict, owner_mark
from legionrm.hostobj.runner.owner import NoOsUser
from legionrm.hostobj.records import Reservation, public
from legionrm.hostobj.resource import ResourceObject
from legionrm.hostobj.runner.accounts import RunError
from legionrm.hostobj.runner.instances import WorkInstances, names_work, request_of
from legionrm.models import (
    AttrValue,
    Holder,
    InstanceRef,
    Refusal,
    ReservationRequest,
    ReservationToken,
    Resources,
    WorkResult,
)


@dataclass(frozen=True)
class StopRecord:
    """Why an instance stopped (kept for ``legionrm status`` and tests)."""

    instance_id: str
    reason: str
    at: float


class HostObject(ResourceObject):
    """A host: capacity in cpus, memory_gb and gpus, a calendar, instances.

    ``vaults`` (shell patterns) names the vaults this host pairs with; empty
    means any.  Other keyword arguments: see :class:`ResourceObject`.
    """

    kind = "host"
    dims = ("cpus", "memory_gb", "gpus")

    def __init__(self, name: str, capacity: Resources, *, vaults: Iterable[str] = (),
                 work: WorkInstances | None = None, **kw: Any) -> None:
        self.dims = type(self).dims + tuple(k for k, _ in capacity.custom)  # its custom kinds: calendar dimensions too
        super().__init__(name, capacity, **kw)
        self.work = work
        self.vaults = tuple(vaults)
        self._instances: dict[str, tuple[InstanceRef, Reservation]] = {}
        self._ids = itertools.count(1)
        self.stopped: collections.deque[StopRecord] = collections.deque(maxlen=1000)
        self.states: dict[str, bytes] = {}  # a simulated instance's state (what save / restore move)
        self.drained: str | None = None  # why an administrator drained it (None: it takes new work)
        self.resumes = 0  # how many times an administrator resumed it (its owner mark says)

    # --- drain (Slurm's DRAIN with a reason): finish what runs, take nothing new ----------

    @public
    def drain(self, reason: str) -> None:
        """Take no new reservations from now on (``host.drained``); what runs, and
        what was reserved before, goes on.  Idempotent; the reason is shown by ``hosts``."""
        self.drained = reason or "drained"

    @public
    def resume(self) -> None:
        """Take new work again, and be asked again by the requests its owner refused for good
        (its :func:`owner_mark` changes).  Idempotent but for that."""
        self.drained = None
        self.resumes += 1

    def _closed(self) -> Refusal | None:
        if self.drained is None:
            return None
        return self._refuse(codes.HOST_DRAINED, f"{self.name} is drained: {self.drained}")
    # --- owner hooks ---------------------------------------------------------------------

    def admit_start(self, token: ReservationToken, class_name: str) -> Verdict:
        """Owner's say when a valid token is presented.  Default: the policy, else admit."""
        return self.policy.admit_start(self, token, class_name) if self.policy else ADMIT

    # --- instances -----------------------------------------------------------------------

    @public
    def start_object(
        self,
        token: ReservationToken,
        class_name: str,
        holder: Holder,
        *,
        vault: str | None = None,
        args: Mapping[str, Any] | None = None,
        impl: str | None = None,
    ) -> InstanceRef | Refusal:
        """Start an instance of ``class_name`` with ``token``, presented by ``holder``.

        ``vault`` is the vault the instance uses (default: the token's);
        ``impl`` the import path of the code to run (real hosts only).  Not
        idempotent: each success starts one instance.  Returns the instance or
        the refusal (a token code, a policy code, or ``start.failed``).
        """
        res = self._validate(token, holder, class_name)
        if isinstance(res, Refusal):
            return res
        use_vault = vault if vault is not None else token.vault
        if use_vault is not None and not self.pairs_with(use_vault):
            return self._refuse(codes.VAULT_INCOMPATIBLE, f"vault {use_vault!r} is not paired with {self.name} ({', '.join(self.vaults)})")
        hook = self.admit_start
        if self.policy is not None or getattr(hook, "__func__", None) is not HostObject.admit_start:
            verdict = self._ask_owner("admit_start", hook, token, class_name)  # (no owner code: nothing to ask)
            if isinstance(verdict, Refusal):
                return verdict
        ref = InstanceRef.adopt({  # the host's own values, every field in field order
            "instance_id": f"{self.name}{tokens.TOKEN_ID_SEP}i{next(self._ids)}",
            "class_name": class_name,
            "host": self.name,
            "vault": use_vault,
            "token_id": token.token_id,
            "user": holder.user,
            "started_at": self._now,  # (the call's time)
            "node_id": None, "work": False, "gpus": (),
            "scheduler": res.token.holder.enactor,  # who issued it: only that scheduler sweeps it
        })
        launched = self._launch(ref, token, impl, dict(args or {}))
        if isinstance(launched, Refusal):
            return launched
        self._instances[launched.instance_id] = (launched, res)
        self._use(res, launched.instance_id)
        return launched

    @public
    def stop_object(self, instance_id: str, reason: str = "stopped") -> Resources | Refusal:
        """Stop an instance (done, preempted, evicted ...) and return its
        capacity to the host.  Returns the resources freed (none when a reusable
        reservation keeps holding them), or ``instance.unknown``."""
        return self._stop(instance_id, reason)

    @public
    def save_object(self, instance_id: str) -> bytes | Refusal:
        """The persistent state of a running instance (its class's save hook,
        else its pickled state), or ``instance.unknown`` / ``state.save_failed``."""
        item = self._instances.get(instance_id)
        if item is None:
            return self._refuse(codes.INSTANCE_UNKNOWN, f"no instance {instance_id!r} on {self.name}")
        return self._save(item[0])

    @public
    def restore_object(self, instance_id: str, data: bytes) -> bool | Refusal:
        """Put saved state into a running instance (freshly started for it):
        True, or ``instance.unknown`` / ``state.restore_failed``."""
        item = self._instances.get(instance_id)
        if item is None:
            return self._refuse(codes.INSTANCE_UNKNOWN, f"no instance {instance_id!r} on {self.name}")
        return self._restore(item[0], data)

    @public
    def instance_holder(self, instance_id: str) -> str | None:
        """The recorded (attested) holder of the reservation ``instance_id`` runs on; None if unknown."""
        item = self._instances.get(instance_id)
        return item[1].token.holder.user if item is not None else None  # (the granted request's holder)

    @public
    def instances_of(self, user: str) -> int:
        """Running instances of ``user`` on this host."""
        return sum(1 for ref, _ in self._instances.values() if ref.user == user)

    @public
    def dynamic_attributes(self) -> dict[str, AttrValue]:
        attrs = super().dynamic_attributes()
        attrs["instances"] = len(self._instances)
        attrs["drained"] = self.drained is not None  # the scheduler's drained filter reads these two
        attrs["drain_reason"] = self.drained or ""
        attrs[OWNER_MARK] = owner_mark(self, self.resumes)
        return attrs

    def shutdown(self, reason: str = "host stopped") -> None:
        """Stop every instance and leave the collection (the host is going away)."""
        with self._lock:
            for iid in list(self._instances):
                self._stop(iid, reason)
        if self.work is not None:  # and wait for every run's process group to be gone
            self.work.runner.stop_all("node_lost")
        self.leave()

    # --- runner work ------------------------------------------------------------------------

    def _start_work(self, ref: InstanceRef, token: ReservationToken, args: dict[str, Any]) -> InstanceRef | Refusal:
        """Start runner work (see the module): as its owner's account, never in a Ray worker."""
        if self.work is None:
            return self._refuse(codes.START_FAILED, f"{self.name} has no runner for {ref.class_name} work")
        res = self._open.get(token.token_id)
        rid = request_of(res.request_id) if res is not None else ""
        try:
            started = self.work.start(ref, token, rid, args, self.now())
        except NoOsUser as exc:
            return self._refuse(exc.code, str(exc))
        except RunError as exc:
            return self._refuse(codes.START_FAILED, str(exc))
        return started.model_copy(update={"node_id": getattr(self, "node_id", None)})

    @public
    def work_results(self, instance_ids: list[str]) -> dict[str, WorkResult]:
        """The results of the ended runs among ``instance_ids`` (those still running, or unknown, are left out)."""
        return self.work.results(instance_ids) if self.work is not None else {}

    def work_output(self, instance_id: str, stream: str = "stdout", offset: int = 0,
                    limit: int = 1 << 20) -> tuple[bytes, int]:
        """A run's output from ``offset`` (see :func:`legionrm.hostobj.runner.read_output`)."""
        return self.work.runner.output(instance_id, stream, offset, limit) if self.work is not None else (b"", 0)

    @public
    def list_instances(self) -> list[InstanceRef]:
        """Running instances, in start order (runs that ended reaped first)."""
        self._reap_work()
        return [ref for ref, _ in self._instances.values()]

    def expire(self) -> list[str]:
        """The timer's sweep (runs that ended reaped first)."""
        with self._lock:
            self._reap_work()
        return super().expire()

    def _reap_work(self) -> list[str]:
        """Stop the instances whose runs ended by themselves (their capacity comes back); their ids."""
        done = self.work.ended() if self.work is not None else []
        for iid in done:
            self._stop(iid, "its run ended")
        return done

    # --- for subclasses ------------------------------------------------------------------

    def _launch(
        self, ref: InstanceRef, token: ReservationToken, impl: str | None, args: dict[str, Any]
    ) -> InstanceRef | Refusal:
        """Run the instance; a simulated host has nothing to run but ``Command``
        work (with a runner).  Return the (possibly enriched) ref, or a ``start.failed`` refusal."""
        if self.work is not None and names_work(impl or ref.class_name):
            return self._start_work(ref, token, args)
        return ref

    def _halt(self, ref: InstanceRef, reason: str) -> None:
        """Stop the running code of an instance (a simulated host has none but its runs)."""
        self.states.pop(ref.instance_id, None)
        if ref.work and self.work is not None:
            self.work.halt(ref.instance_id, reason)

    def _save(self, ref: InstanceRef) -> bytes | Refusal:
        """A simulated instance's state is what :attr:`states` holds for it (empty at first)."""
        return self.states.get(ref.instance_id, b"")

    def _restore(self, ref: InstanceRef, data: bytes) -> bool | Refusal:
        self.states[ref.instance_id] = bytes(data)
        return True

    # --- internals -------------------------------------------------------------------------

    def _stop(self, instance_id: str, reason: str) -> Resources | Refusal:
        item = self._instances.pop(instance_id, None)
        if item is None:
            return self._refuse(codes.INSTANCE_UNKNOWN, f"no instance {instance_id!r} on {self.name}")
        ref, res = item
        self._halt(ref, reason)
        self.stopped.append(StopRecord(instance_id, reason, self.now()))
        self._unuse(res, instance_id)
        return res.token.resources if res.closed_at is not None else Resources()

    def _end_holders(self, res: Reservation, now: float) -> None:
        # The reservation's time is up: its instances stop with it (walltime).
        for iid in sorted(res.holders):
            item = self._instances.pop(iid, None)
            if item is not None:
                self._halt(item[0], "reservation ended")
                self.stopped.append(StopRecord(iid, "reservation ended", now))
        res.holders = ()

    def pairs_with(self, vault: str) -> bool:
        """Is ``vault`` one this host may use (Legion's host-vault pairing; no list: any)?"""
        return not self.vaults or any(fnmatch.fnmatchcase(vault, p) for p in self.vaults)

    def _check_pairing(self, request: ReservationRequest) -> Refusal | None:
        if request.vault is not None and not self.pairs_with(request.vault):
            return self._refuse(codes.VAULT_INCOMPATIBLE, f"vault {request.vault!r} is not paired with {self.name} ({', '.join(self.vaults)})")
        custom = request.resources.custom
        lacking = [k for k, v in custom if v > 0 and k not in self.dims] if custom else None
        if lacking:  # a kind it does not have: its calendar cannot count it, so it never fits
            kinds = ", ".join(self.dims[len(HostObject.dims):]) or "none"
            return self._refuse(codes.CAPACITY_TOTAL, f"{self.name} has no {', '.join(lacking)} (its custom kinds: {kinds})")
        return None
