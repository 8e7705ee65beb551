"""A pool's configuration: its kinds (reservation, limit, share, type) and
limits, and pool paths.  The piece the tree and its validators share, so
neither imports the other's internals for it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

from legionrm.scheduler.pools.vec import KINDS

ROOT_ID = "root"
DEFAULT_SLACK_LIMIT_PERCENT = 20.0
"""Peloton's code default; the proto comment's "undefined = no max" is not what runs."""


class ReservationType(str, Enum):
    """STATIC always gets its whole reservation; ELASTIC only what its demand claims of it."""

    ELASTIC = "ELASTIC"
    STATIC = "STATIC"


@dataclass(frozen=True)
class ResourceSpec:
    """A pool's configuration for one resource kind."""

    kind: str
    reservation: float = 0.0
    limit: float = 0.0
    share: float = 1.0
    type: ReservationType = ReservationType.ELASTIC


@dataclass(frozen=True)
class PoolConfig:
    """A pool's configuration.

    ``resources`` is a list (not a map) so that a repeated or unknown kind can
    be reported by the validator.  ``slack_limit_percent`` None means the
    default 20 %; ``controller_limit_percent`` None means no controller limit.
    """

    resources: tuple[ResourceSpec, ...] = ()
    controller_limit_percent: float | None = None
    slack_limit_percent: float | None = None
    policy: str = "PriorityFIFO"

    def spec(self, kind: str) -> ResourceSpec | None:
        for r in self.resources:
            if r.kind == kind:
                return r
        return None

    def with_defaults(self) -> "PoolConfig":
        """Kinds not configured are appended as reservation 0, limit 0, share 1 (the validator's side effect)."""
        present = {r.kind for r in self.resources}
        extra = tuple(ResourceSpec(k, 0.0, 0.0, 1.0) for k in KINDS if k not in present)
        policy = "PriorityFIFO" if self.policy in ("", "UNKNOWN") else self.policy
        return replace(self, resources=self.resources + extra, policy=policy)


def split_path(path: str) -> tuple[str, str]:
    """``/a/b`` -> (``/a``, ``b``); ``/a`` -> (``/``, ``a``).  The path must already be valid."""
    parent, _, name = path.rpartition("/")
    return (parent or "/"), name
