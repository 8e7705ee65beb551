"""Pydantic types that cross an actor boundary.

Everything a Ray call carries in or out is defined here, in one installed
package, so that Ray pickles it by reference (cheap) and every part of the
system agrees on one shape.  Models are frozen where they are values
(tokens, refusals, records) so that nobody edits a copy they do not own.
"""

from __future__ import annotations

from legionrm.models.base import (  # noqa: F401
    AccessPolicy,
    AttrValue,
    Frozen,
    Identity,
    QueryResult,
    Refusal,
    ResourceKind,
    ResourceRecord,
)
from legionrm.models.cluster import (  # noqa: F401
    ClassSpec,
    ClusterSpec,
    CollectionSettings,
    HostSpec,
    ImplementationSpec,
    PoolResourceSpec,
    PoolSpec,
    VaultSpec,
)
from legionrm.models.elastic import (  # noqa: F401
    CycleReport,
    ElasticChange,
    ElasticJobRequest,
    ElasticJobStatus,
    ElasticUserTotals,
    SchedulerStatus,
)
from legionrm.models.requests import (  # noqa: F401
    FINAL_STATES,
    AuditFinding,
    HeldReservation,
    InstanceInfo,
    InstanceState,
    RequestEvent,
    RequestInfo,
    RequestState,
    ResourceAudit,
)
from legionrm.models.reservations import (  # noqa: F401
    Holder,
    InstanceRef,
    ReservationRequest,
    ReservationToken,
    Resources,
    StartRequest,
)
from legionrm.models.schedules import (  # noqa: F401
    DeltaSchedule,
    EnactRequest,
    EnactResult,
    MasterSchedule,
    ObjectRequest,
    Placement,
    PlacementFailure,
    PlacementMode,
    ReservedStart,
    ScheduleAttempt,
    ScheduleProposal,
    SchedulerResponse,
    ScheduleSuite,
    SchedulingRequest,
)

__all__ = [
    "FINAL_STATES",
    "AuditFinding",
    "HeldReservation",
    "ResourceAudit",
    "InstanceInfo",
    "InstanceState",
    "RequestEvent",
    "RequestInfo",
    "RequestState",
    "AccessPolicy",
    "AttrValue",
    "ClassSpec",
    "ClusterSpec",
    "CollectionSettings",
    "CycleReport",
    "DeltaSchedule",
    "ElasticChange",
    "ElasticJobRequest",
    "ElasticJobStatus",
    "ElasticUserTotals",
    "EnactRequest",
    "EnactResult",
    "Frozen",
    "Holder",
    "HostSpec",
    "Identity",
    "ImplementationSpec",
    "InstanceRef",
    "MasterSchedule",
    "ObjectRequest",
    "Placement",
    "PlacementFailure",
    "PlacementMode",
    "PoolResourceSpec",
    "PoolSpec",
    "QueryResult",
    "Refusal",
    "ReservationRequest",
    "ReservationToken",
    "ReservedStart",
    "ResourceKind",
    "ResourceRecord",
    "Resources",
    "ScheduleAttempt",
    "ScheduleProposal",
    "ScheduleSuite",
    "SchedulerResponse",
    "SchedulerStatus",
    "SchedulingRequest",
    "StartRequest",
    "VaultSpec",
]
