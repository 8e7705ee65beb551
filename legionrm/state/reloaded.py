"""What ``legionrm reload`` gave one Scheduler, in SQLite: :class:`ReloadedStore`.

Three rows at most, in the Scheduler's own state file: ``site`` (the site
policy: the ``[[qos]]`` tables, each class's default QoS, the site's keys
of ``[fairshare]``), ``serves`` (its nodepools and constraint) and ``rules``
(the ``[[ray_node]]`` rules the Ray nodes that join are bound by).  Each
row names the ``boot`` that wrote it (the Scheduler actor's id, which Ray
keeps when it restarts the actor and a new ``up`` does not), so a restarted
Scheduler takes back what the reloads of its own boot applied, and a new
boot starts from the cluster file it is given.  A write is synced to the
disk before it returns; the Scheduler writes before it acts (see
:mod:`legionrm.scheduler.several.kept`).  Thread-safe.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from legionrm.models import RayNodeRule, SchedulerSpec, SitePolicySpec
from legionrm.state.sqlite import KeyedStore, StateError


@dataclass(frozen=True)
class Reloaded:
    """What the reloads of one boot applied (None: that part as its cluster file says)."""

    site: SitePolicySpec | None = None
    serves: SchedulerSpec | None = None
    rules: tuple[RayNodeRule, ...] | None = None


class ReloadedStore(KeyedStore):
    """A Scheduler's reloaded settings in the SQLite file ``path`` (created with its folder;
    it may be shared with the request store: another table)."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path, "reloaded", "part", "state store")

    def write(self, boot: str, *, site: SitePolicySpec | None = None, serves: SchedulerSpec | None = None,
              rules: tuple[RayNodeRule, ...] | None = None) -> None:
        """Keep ``site``, ``serves`` and/or ``rules`` (those given) as boot ``boot``'s, synced to
        the disk.  Raises :class:`~legionrm.state.StoreFault` with nothing written."""
        parts = {"site": site and site.model_dump(mode="json"), "serves": serves and serves.model_dump(mode="json"),
                 "rules": None if rules is None else [r.model_dump(mode="json") for r in rules]}
        rows = [(part, json.dumps({"boot": boot, "spec": spec})) for part, spec in parts.items() if spec is not None]
        self._put_rows(rows, durable=True)

    def load(self, boot: str) -> Reloaded:
        """What boot ``boot`` kept (rows another boot wrote are not its own: ignored)."""
        try:
            rows = {part: json.loads(body) for part, body in self._rows()}
            mine = {part: row["spec"] for part, row in rows.items() if row.get("boot") == boot}
            return Reloaded(site=SitePolicySpec.model_validate(mine["site"]) if "site" in mine else None,
                            serves=SchedulerSpec.model_validate(mine["serves"]) if "serves" in mine else None,
                            rules=tuple(RayNodeRule.model_validate(r) for r in mine["rules"]) if "rules" in mine
                            else None)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:  # (a ValidationError is a ValueError)
            raise StateError(f"the state store {self.path} is damaged (its reloaded settings): {exc}") from None
