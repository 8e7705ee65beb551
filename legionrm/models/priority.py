"""The queue's own views and calls: the fair-share tree (``legionrm share``), each pending
request's priority factors (``legionrm prio``), and an administrator's ``update``."""

from __future__ import annotations

from pydantic import Field

from legionrm.models.base import Frozen

MAX_PRIORITY = 2**31 - 1


class ShareRow(Frozen):
    """One group (``user`` None) or one user of the fair-share tree, as ``sshare`` shows it."""

    group: str
    user: str | None = None
    shares: float = 0.0
    """The raw shares the cluster file gives it (among its siblings)."""
    norm_shares: float = 0.0
    """Its part of the whole cluster: its group's part times its part of the group."""
    raw_usage: float = 0.0
    """Cpu-seconds of finished and running work, never decayed."""
    decayed_usage: float = 0.0
    """Cpu-seconds decayed with the half-life."""
    norm_usage: float = 0.0
    """Its part of everyone's decayed usage."""
    factor: float = 1.0
    """The fair-share factor ``2^(-norm_usage / norm_shares)`` (0 without shares)."""


class ShareReport(Frozen):
    half_life_s: float
    rows: tuple[ShareRow, ...] = ()


class PrioRow(Frozen):
    """One pending request's factors (each 0 to 1) and priority, as ``sprio`` shows them."""

    id: str
    user: str
    qos: str
    priority: float
    age: float = 0.0
    fairshare: float = 0.0
    qos_factor: float = 0.0
    size: float = 0.0
    fixed: bool = False
    """An administrator set its priority (``update --priority``, ``top``): the factors do not add up to it."""
    hold: str | None = None
    blocked: str = ""
    """Why it may not start now though it waits (a hold or a QoS limit), else empty."""


class PrioReport(Frozen):
    weights: dict[str, float] = Field(default_factory=dict)
    rows: tuple[PrioRow, ...] = ()


class UpdateBody(Frozen):
    """``legionrm update ID --priority N | --qos Q`` (administrators)."""

    priority: int | None = Field(None, ge=-MAX_PRIORITY, le=MAX_PRIORITY)
    qos: str | None = Field(None, min_length=1, max_length=200)
    clear_priority: bool = False
    """Give the request back to the formula (forget an administrator's priority)."""
