"""Reservations on the resource side: resources, holders, requests, tokens, instances, and batched starts."""

from __future__ import annotations

from typing import Any, Mapping

from pydantic import Field

from legionrm.models.base import AttrValue, Frozen, Identity

# --- reservations (resource side) --------------------------------------------


KIND_NAME = r"[A-Za-z_][A-Za-z0-9_]{0,63}"
"""A custom resource kind's name (a Ray custom resource as MIL sees it: ``\\W`` -> ``_``)."""
BUILTIN_KINDS = frozenset({"cpus", "memory_gb", "gpus", "storage_gb", "CPU", "GPU", "memory", "object_store_memory"})
"""Names a custom kind may not take: the built-in dimensions and Ray's own."""


class Resources(Frozen):
    """An amount of a host's (or vault's) capacity.  ``custom`` holds the
    custom resource kinds (a Ray node's custom resources), name order, as
    (name, amount) pairs: a tuple, so a Resources stays hashable."""

    cpus: float = Field(0.0, ge=0)
    memory_gb: float = Field(0.0, ge=0)
    gpus: int = Field(0, ge=0)
    storage_gb: float = Field(0.0, ge=0)
    exclusive: bool = False
    custom: tuple[tuple[str, float], ...] = ()

    def amount(self, kind: str) -> float:
        """How much of ``kind`` (a built-in dimension or a custom kind; 0 when absent)."""
        if kind in _AMOUNT_FIELDS:
            return float(getattr(self, kind))
        return next((float(v) for k, v in self.custom if k == kind), 0.0)

    def amounts(self, kinds: tuple[str, ...]) -> tuple[float, ...]:
        """:meth:`amount` of each of ``kinds``, in one pass (a host reads it at every grant)."""
        got = self.__dict__
        if not self.custom:
            return tuple(float(got[k]) if k in _AMOUNT_FIELDS else 0.0 for k in kinds)
        custom = dict(reversed(self.custom))  # (the first of a kind counts, as amount() reads it)
        return tuple(float(got[k]) if k in _AMOUNT_FIELDS else float(custom.get(k, 0.0)) for k in kinds)


_AMOUNT_FIELDS = frozenset(Resources.model_fields) - {"custom", "exclusive"}
"""The dimensions a :class:`Resources` holds as fields (any other kind is a custom one)."""


def custom_kinds(amounts: Mapping[str, float]) -> tuple[tuple[str, float], ...]:
    """``Resources.custom`` from a mapping: positive amounts only, name order."""
    return tuple(sorted((str(k), float(v)) for k, v in amounts.items() if v > 0))


class Holder(Frozen):
    """Who holds a reservation: the user, the class, and the enactor acting."""

    user: str
    class_name: str | None = None
    enactor: str = "enactor"
    groups: tuple[str, ...] = ()

    def identity(self) -> Identity:
        return Identity(user=self.user, class_name=self.class_name, groups=self.groups)


class ReservationRequest(Frozen):
    """Ask a host or vault for a block of capacity over time.

    ``request_id`` is chosen by the caller and makes ``make_reservation``
    idempotent: asking twice with the same id returns the same token.
    ``start=None`` means an instant reservation (now); a future time is an
    advance reservation.  ``timeout_s`` is how long the holder has to use the
    token before it expires at the resource.
    """

    request_id: str
    resource: str
    holder: Holder
    resources: Resources
    vault: str | None = None
    start: float | None = None
    duration_s: float | None = Field(None, gt=0)
    timeout_s: float = Field(30.0, gt=0)
    reusable: bool = False
    attestation: dict[str, Any] | None = None
    """The Scheduler's signed statement of who holds this reservation (an
    :class:`~legionrm.auth.Attestation` as a dict); a host that checks
    identities refuses a request without a good one."""


class ReservationToken(Frozen):
    """Proof of a reservation, signed (HMAC-SHA256) by the issuing resource."""

    token_id: str
    issuer: str
    holder: Holder
    resources: Resources
    vault: str | None = None
    start: float
    end: float | None
    expires_at: float
    reusable: bool = False
    signature: str = ""


class InstanceRef(Frozen):
    """A running instance started on a host with a token."""

    instance_id: str
    class_name: str
    host: str
    vault: str | None = None
    token_id: str
    user: str
    started_at: float
    node_id: str | None = None
    work: bool = False
    """Run by its host's runner as its owner's OS account (a ``Command``): its
    host keeps its result (``work_results``) and output (``work_output``)."""
    gpus: tuple[int, ...] = ()
    """The GPU devices its host gave it (its ``CUDA_VISIBLE_DEVICES``), from the host's one ledger
    of devices for Ray actors and runner work alike (:class:`~legionrm.hostobj.ray_node.RayNodeHost`)."""
    scheduler: str = ""
    """Who issued the reservation it runs on (its holder's ``enactor``: a
    scheduler's name, or its elastic cycle's): only that scheduler sweeps and
    audits it.  Empty for instances started before schedulers were named."""


# --- host objects: batched starts (hostobj) -----------------------------------


class StartRequest(Frozen):
    """One ``start_object`` in a host group's batched ``start_objects``.

    The host is the token's issuer; ``holder`` is who presents the token (it
    must be the token's holder); ``impl`` is the import path ("module:Class")
    of the code a real host runs (simulated hosts ignore it).
    """

    token: ReservationToken
    class_name: str
    holder: Holder
    vault: str | None = None
    args: dict[str, AttrValue] = Field(default_factory=dict)
    impl: str | None = None


class CreateRequest(Frozen):
    """One ``create_instance`` in a class object's batched ``create_instances``.

    Start an instance of the class on ``host`` with the host's reservation
    ``token``; ``vault`` is the vault the instance uses (None: the issuer of
    ``vault_token``, else the one named in ``token``), and ``vault_token`` the
    vault reservation whose space it takes; ``holder`` is who presents the
    tokens (None: the token's holder).
    """

    host: str
    token: ReservationToken
    vault: str | None = None
    vault_token: ReservationToken | None = None
    holder: Holder | None = None
    args: dict[str, AttrValue] = Field(default_factory=dict)
