"""Admission through resource pools for ``scheduleObjects``: :class:`RespoolGate`.

The Scheduler asks its :class:`~legionrm.scheduler.ports.PoolGate` before
it plans (step 1 of DESIGN.md's flow).  ``RespoolGate`` answers from a
Peloton-style :class:`~legionrm.scheduler.pools.respool.ResourcePoolTree`:

1. the request's pool path is resolved to a **leaf** (gangs are admitted into
   leaves only, as Peloton's EnqueueGang): an unknown or malformed path is
   refused ``respool.unknown`` by ``respool``; a pool with children
   ``respool.not_leaf``, naming the path and its leaves;
2. the request becomes a gang (:func:`gang_from_request`: one task per
   instance, memory and storage in MB); a gang bigger than the leaf's limit
   in some kind can never be admitted there and is refused ``respool.limit``;
3. the gang is enqueued in the leaf (its demand counts), the entitlement is
   recomputed for the cluster capacity, and the leaf's admitters run for this
   gang (:meth:`ResourcePoolTree.admit_now`).  Admitted: None, and the
   allocation stays charged until :meth:`RespoolGate.release`.  Not
   admissible now: the admitter's Refusal (``respool.entitlement``, ...),
   its ``by`` made ``respool:<path>``.

Decisions (and why):

* **No queueing across calls.**  ``scheduleObjects`` is synchronous and
  answers a refusal at once, so a refused gang is withdrawn from the queue
  (its demand too) before ``admit`` returns; nothing waits in a pool for a
  caller that has gone.  A caller retries later with a new request.  The
  admitted gang does not wait behind other queued gangs either
  (``admit_now``), and there are none: the gate owns its tree.
* **Entitlement on every admit.**  Each admit changes demand (the gang is
  enqueued first, so that ELASTIC reservations see it), and entitlement
  depends on every pool's demand and allocation; recomputing is a few numpy
  operations per tree level, cheap next to planning.  Releases need no
  recomputation: the next admit does it.
* **The root** ``/`` (every request's default pool): while ``/`` has no
  children it is a leaf entitled to the whole capacity.  Once it has
  children, a request naming ``/`` goes to the ``default_pool`` leaf when one
  is configured (``default = true`` on a ``[[pool]]`` table of the cluster
  file), and is refused ``respool.not_leaf`` otherwise.  It is never let
  through ungated: that would let unlabelled work around every limit.
* **Activation only** (a request with no objects): admitted with nothing
  charged; the objects it activates were admitted when they were created.
* **No preemption here.**  Peloton over-commits reservations (phase 1 of the
  entitlement) and repairs with preemption; this gate only admits, so a
  pool can be admitted to its reservation while another pool still holds
  hosts above its own.  Placement then fails or succeeds on the hosts
  themselves, and the Scheduler releases the allocation of a failed plan or
  enactment.

Thread-safe: one lock around every use of the tree (the Scheduler calls the
gate from several threads; the tree itself is not thread-safe).  Picklable
(the lock is recreated), so a gate can be handed to the Scheduler actor.
Nothing here imports ray.
"""

from __future__ import annotations

import threading
from typing import Any, Mapping

import numpy as np

from legionrm import codes
from legionrm.errors import (
    AdmissionError,
    ConfigError,
    PoolNotFoundError,
    PoolValidationError,
)
from legionrm.models import ClusterSpec, Refusal, Resources, SchedulingRequest
from legionrm.scheduler.pools.custom import CustomLedger, custom_need
from legionrm.scheduler.pools.gang import TOTAL
from legionrm.scheduler.pools.respool import (
    MB_PER_GB,
    ResourcePoolTree,
    gang_from_request,
)
from legionrm.scheduler.pools.spec import build_tree
from legionrm.scheduler.pools.vec import EPS, KINDS, Vec, as_dict, exceeds, go_num, vec

GATE = "respool"
"""``by`` of a refusal no pool gave (the path names no pool)."""

# The admitters' codes come from admission.check: respool.entitlement,
# respool.slack_entitlement, respool.controller_limit, respool.reservation;
# and respool.invalid from ResourcePoolTree.admit_now.

_LEAVES_SHOWN = 8


def capacity_vector(capacity: Resources | Mapping[str, float]) -> Vec:
    """Pool kinds from a capacity: a :class:`Resources` (cpus, memory_gb,
    gpus, storage_gb, converted to MB as :func:`gang_from_request` converts
    requests) or a mapping of pool kinds (cpu, memory MB, disk MB, gpu)."""
    if isinstance(capacity, Resources):
        return vec({"cpu": capacity.cpus, "memory": capacity.memory_gb * MB_PER_GB,
                    "disk": capacity.storage_gb * MB_PER_GB, "gpu": float(capacity.gpus)})  # fmt: skip
    return vec(capacity)


class RespoolGate:
    """A :class:`~legionrm.scheduler.ports.PoolGate` over a resource-pool tree.

    ``tree`` is owned by the gate from now on (use it only through the gate);
    ``capacity`` is the cluster's (see :func:`capacity_vector`), updatable
    with :meth:`set_capacity`; ``default_pool`` is the leaf taking requests
    that name ``/`` once ``/`` has children.  Raises PoolNotFoundError for an
    unknown default pool and AdmissionError for one that is not a leaf.
    """

    def __init__(
        self,
        tree: ResourcePoolTree,
        capacity: Resources | Mapping[str, float],
        *,
        default_pool: str | None = None,
    ) -> None:
        self._tree = tree
        self._capacity = capacity_vector(capacity)
        self.default_pool = default_pool
        if default_pool is not None and not tree.get(default_pool).is_leaf:
            raise AdmissionError(f"default pool {default_pool} is not a leaf node")
        self._held: dict[str, str] = {}  # admitted request id -> its leaf's path
        self._custom = CustomLedger()  # what each admitted request holds of the custom kinds
        self._lock = threading.Lock()
        tree.compute_entitlement(self._capacity)  # the root's limit is the capacity from the start

    # --- PoolGate ---------------------------------------------------------------

    def admit(self, request: SchedulingRequest) -> Refusal | None:
        """None when the request's gang is admitted into its leaf pool (its
        allocation charged until :meth:`release`); otherwise a Refusal with a
        ``respool.*`` code, by ``respool:<path>`` (``respool`` for a path
        that names no pool).  A refused gang is not left queued."""
        if not request.objects:
            return None
        gang = gang_from_request(request)
        with self._lock:
            found = self._leaf(request.pool)
            if isinstance(found, Refusal):
                return found
            path = found
            by = f"{GATE}:{path}"
            rid = request.request_id
            if rid in self._held:
                return Refusal(code=codes.RESPOOL_DUPLICATE, by=by, reason=f"request {rid} is already admitted in {self._held[rid]}")
            limit = self._tree.get(path).limit
            if exceeds(gang.need, limit):
                need = _over(gang.need, limit)
                return Refusal(code=codes.RESPOOL_LIMIT, by=by,
                               reason=f"request {rid} needs {need} (the pool's limit): it can never be admitted in {path}")
            custom = custom_need(request)  # its custom kinds: capped by the pools that name them (pools.custom)
            if custom and (over := self._custom.refusal(self._tree.get(path), rid, custom)) is not None:
                return over
            try:
                self._tree.enqueue(gang, path)
            except AdmissionError as exc:  # the id is queued or admitted in the tree by someone else
                return Refusal(code=codes.RESPOOL_DUPLICATE, by=by, reason=str(exc))
            try:
                self._tree.compute_entitlement(self._capacity)
                refusal = self._tree.admit_now(gang.id)
            except BaseException:
                self._tree.cancel(gang.id)
                raise
            if refusal is None:
                self._held[rid] = path
                self._custom.charge(rid, path, custom)
                return None
            self._tree.cancel(gang.id)  # synchronous caller: nothing stays queued (module docstring)
            return refusal.model_copy(update={"by": f"{GATE}:{refusal.by}"})

    def release(self, request_id: str) -> None:
        """Give back what :meth:`admit` charged for ``request_id``.  Idempotent;
        an unknown or refused request id is ignored."""
        with self._lock:
            if self._held.pop(request_id, None) is not None:
                self._tree.release(request_id)
            self._custom.release(request_id)

    # --- capacity and state -----------------------------------------------------

    def set_capacity(self, capacity: Resources | Mapping[str, float]) -> None:
        """A new cluster capacity (hosts joined or left); entitlement follows at once."""
        with self._lock:
            self._capacity = capacity_vector(capacity)
            self._tree.compute_entitlement(self._capacity)

    @property
    def capacity(self) -> dict[str, float]:
        """The cluster capacity in pool kinds (cpu, memory MB, disk MB, gpu)."""
        with self._lock:
            return as_dict(self._capacity)

    @property
    def tree(self) -> ResourcePoolTree:
        """The pools themselves: changed only on a copy of the gate (:func:`~legionrm.scheduler.pools.live.reconfigured`)."""
        return self._tree

    def held(self) -> dict[str, str]:
        """Admitted request ids (not yet released) -> the leaf each is charged to."""
        with self._lock:
            return dict(self._held)

    def allocation(self, path: str) -> dict[str, float]:
        """The total allocation of a pool (a non-leaf: its leaves summed), in pool kinds."""
        with self._lock:
            self._tree.aggregate()
            return as_dict(self._tree.get(path).alloc[TOTAL])

    def report(self) -> dict[str, dict[str, object]]:
        """Per pool entitlements, allocation and queues, JSON-ready (as ``legionrm pools``); a pool
        that names or holds custom kinds also its ``custom``: kind -> allocation and limit."""
        with self._lock:
            out = self._tree.report()
            for pool in self._tree.pools():
                if custom := self._custom.report(pool):
                    out[pool.path]["custom"] = custom
            return out

    # --- helpers ----------------------------------------------------------------

    def _leaf(self, path: str) -> str | Refusal:
        """The leaf a request naming ``path`` goes to, or the refusal."""
        tree = self._tree
        if path == "/" and not tree.root.is_leaf and self.default_pool is not None:
            path = self.default_pool
        try:
            pool = tree.get(path)
        except (PoolNotFoundError, PoolValidationError) as exc:
            known = ", ".join(p.path for p in tree.pools(leaf_only=True)[:_LEAVES_SHOWN])
            return Refusal(code=codes.RESPOOL_UNKNOWN, by=GATE, reason=f"no resource pool {path!r} ({exc}); leaf pools: {known}")
        if pool.is_leaf:
            return pool.path
        prefix = pool.path if pool.path == "/" else pool.path + "/"
        leaves = [p.path for p in tree.pools(leaf_only=True) if p.path.startswith(prefix)]
        shown = ", ".join(leaves[:_LEAVES_SHOWN]) + (", ..." if len(leaves) > _LEAVES_SHOWN else "")
        hint = " or configure a default pool" if pool.is_root else ""
        return Refusal(code=codes.RESPOOL_NOT_LEAF, by=f"{GATE}:{pool.path}",
                       reason=f"{pool.path} is not a leaf pool: work is admitted into leaves only; "
                              f"name one of {shown}{hint}")  # fmt: skip

    # --- pickling (a gate may be sent to the Scheduler actor) --------------------

    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


def _over(need: Vec, bound: Vec) -> str:
    """``cpu 300 > 100`` for the first kind where ``need`` passes ``bound``."""
    over = np.flatnonzero(np.asarray(need) - bound >= EPS)
    i = int(over[0]) if len(over) else 0
    return f"{KINDS[i]} {go_num(round(float(need[i]), 6))} > {go_num(round(float(bound[i]), 6))}"


def tree_for_cluster(spec: ClusterSpec) -> ResourcePoolTree | None:
    """The cluster's ``[[pool]]`` tables as a fresh resource-pool tree under a
    root entitled to :meth:`ClusterSpec.capacity`; None when no pool is
    configured.  The tables go through the one parser and tree builder of
    :mod:`legionrm.scheduler.pools.spec`.  A pool the validators refuse, or a
    ``default`` pool with children, is a ConfigError naming the file."""
    if not spec.pools:
        return None
    try:
        tree = build_tree(spec.pools, as_dict(capacity_vector(spec.capacity())))
    except PoolValidationError as exc:
        raise ConfigError(str(exc), file=spec.source, table="pool") from None
    default = spec.default_pool()
    if default is not None and not tree.get(default).is_leaf:
        i = next(i for i, p in enumerate(spec.pools) if p.default)
        raise ConfigError(f"the default pool {default} has child pools; it must be a leaf",
                          file=spec.source, table=f"pool[{i}]", key="default")
    return tree
