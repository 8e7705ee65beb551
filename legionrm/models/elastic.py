"""The elastic scheduling cycle: jobs, changes, status and reports."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from legionrm.models.base import AttrValue, Frozen
from legionrm.models.reservations import InstanceRef

# --- the elastic scheduling cycle (legionrm.scheduler.elastic.cycle) ---------------------


class ElasticJobRequest(Frozen):
    """Long-running elastic work for the scheduling cycle: as many processes
    (instances of ``class_name``) as the fair-share core grants, re-balanced
    every cycle.  ``ducc_class`` is the FAIR_SHARE class that sets its
    priority and weight (None: the default FAIR_SHARE class).  ``memory_gb``
    per process is what the core counts (in quanta); ``cpus`` and ``gpus`` are
    carried to every reservation.  ``work_items`` is the work left (None:
    unbounded); ``time_per_item_ms`` 0 means no item has finished yet (the
    job is still initializing and its growth is capped, as in DUCC)."""

    job_id: str = Field(min_length=1)
    user: str = Field(min_length=1)
    class_name: str = Field(min_length=1)
    ducc_class: str | None = None
    memory_gb: float = Field(gt=0)
    cpus: float = Field(1.0, ge=0)
    gpus: int = Field(0, ge=0)
    work_items: int | None = Field(None, ge=0)
    threads: int = Field(1, ge=1)
    max_processes: int | None = Field(None, ge=0)
    time_per_item_ms: float = Field(0.0, ge=0)
    init_time_ms: float = Field(0.0, ge=0)
    groups: tuple[str, ...] = ()
    args: dict[str, AttrValue] = Field(default_factory=dict)


class ElasticChange(Frozen):
    """One process that started (``grew``), stopped (``shrank``) or could not
    start (``refused``) in a cycle, and why (``code`` is the refusal code)."""

    job_id: str
    user: str
    share: int
    host: str
    change: Literal["grew", "shrank", "refused"]
    reason: str
    code: str = ""
    instance_id: str | None = None


class ElasticJobStatus(Frozen):
    """One elastic job after a cycle: ``processes`` running (``instances``,
    ``hosts`` host -> count), ``target`` the count the core gave it this cycle,
    ``evicting`` processes told to stop whose exit is not confirmed yet."""

    job_id: str
    user: str
    class_name: str
    ducc_class: str
    processes: int
    target: int
    evicting: int = 0
    cap: int = 0
    pure_fair_share: int = 0
    reason: str = ""
    memory_gb: float = 0.0
    cpus: float = 0.0
    hosts: dict[str, int] = Field(default_factory=dict)
    instances: tuple[InstanceRef, ...] = ()


class ElasticUserTotals(Frozen):
    user: str
    jobs: int
    processes: int
    target: int
    memory_gb: float
    cpus: float


class CycleReport(Frozen):
    """What one elastic scheduling cycle did: why it ran (``triggers``), every
    job and user after it, what grew, shrank or was refused, the hosts' states
    (``up``, ``dead``, ``off``) and the jobs left needy by defragmentation."""

    cycle: int
    at: float
    triggers: tuple[str, ...] = ()
    jobs: dict[str, ElasticJobStatus] = Field(default_factory=dict)
    users: dict[str, ElasticUserTotals] = Field(default_factory=dict)
    grew: tuple[ElasticChange, ...] = ()
    shrank: tuple[ElasticChange, ...] = ()
    refused: tuple[ElasticChange, ...] = ()
    hosts: dict[str, str] = Field(default_factory=dict)
    needy: tuple[str, ...] = ()
    elapsed_ms: float = 0.0


class SchedulerStatus(Frozen):
    """What ``legionrm status`` shows of a Scheduler: the instances it started
    (``hosts``: host -> count), the elastic jobs after its last cycle, and its
    resource pools' entitlement and allocation (Peloton units: memory and disk in MB)."""

    instances: int = 0
    hosts: dict[str, int] = Field(default_factory=dict)
    last_cycle: int = 0
    elastic: dict[str, ElasticJobStatus] = Field(default_factory=dict)
    pools: dict[str, dict[str, Any]] = Field(default_factory=dict)
    requests: dict[str, int] = Field(default_factory=dict)  # state -> how many requests are in it
    store: dict[str, Any] = Field(default_factory=dict)
    """Its state store: ``path``, ``bytes`` on disk and, while its writes fail, ``fault`` (one line
    naming the code and the file); empty without a store."""
