"""The elastic cycle's book in SQLite: :class:`ElasticStore`.

One row per elastic job holds what a restarted Scheduler needs to take the
job back without losing, leaking or doubling anything: the job's request
and fair-share class, its age, what the pools charge it (processes), each
running process (its share id, its instance, its investment) and each stop
still owed (an instance being stopped, with why).  The cycle writes a job's
row before it acts on a change (a submission, a completion, an update, a
stop) and as soon as an enactment reports its instances; a completed job
keeps its row until its last instance is stopped, then the row is deleted.
:meth:`ElasticStore.write` writes and deletes rows in one transaction.
Thread-safe (one connection behind a lock); the file may be shared with the
request store (another table).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from legionrm.models import ElasticJobRequest, InstanceRef
from legionrm.state.sqlite import KeyedStore, StateError


@dataclass(frozen=True)
class StoredShare:
    """One running process of a job: the core's share id, the instance, its investment (ms)."""

    share: int
    instance: InstanceRef
    investment_ms: float = 0.0


@dataclass(frozen=True)
class StoredStop:
    """A stop owed: ``instance`` must be stopped (``share``: the core's share to confirm, if any)."""

    instance: InstanceRef
    share: int | None
    reason: str


@dataclass(frozen=True)
class StoredElasticJob:
    """One elastic job as the store gives it back.  ``active`` is False once the
    job completed (its row stays while instances or stops remain)."""

    request: ElasticJobRequest
    ducc_class: str
    submitted: float
    active: bool
    charged: int
    shares: tuple[StoredShare, ...] = ()
    owed: tuple[StoredStop, ...] = ()

    @property
    def job_id(self) -> str:
        return self.request.job_id

    @property
    def empty(self) -> bool:
        """Nothing left to remember: completed, with no process and no stop owed."""
        return not self.active and not self.shares and not self.owed


def _body(job: StoredElasticJob) -> str:
    return json.dumps({
        "request": job.request.model_dump(mode="json"), "ducc_class": job.ducc_class, "submitted": job.submitted,
        "active": job.active, "charged": job.charged,
        "shares": [{"share": s.share, "instance": s.instance.model_dump(mode="json"), "investment_ms": s.investment_ms}
                   for s in job.shares],
        "owed": [{"instance": o.instance.model_dump(mode="json"), "share": o.share, "reason": o.reason} for o in job.owed],
    })


def _job(d: dict) -> StoredElasticJob:
    return StoredElasticJob(
        request=ElasticJobRequest.model_validate(d["request"]), ducc_class=d["ducc_class"],
        submitted=float(d["submitted"]), active=bool(d["active"]), charged=int(d["charged"]),
        shares=tuple(StoredShare(int(s["share"]), InstanceRef.model_validate(s["instance"]), float(s["investment_ms"]))
                     for s in d["shares"]),
        owed=tuple(StoredStop(InstanceRef.model_validate(o["instance"]), o["share"], o["reason"]) for o in d["owed"]),
    )


class ElasticStore(KeyedStore):
    """Elastic jobs by id in the SQLite file ``path`` (created with its folder)."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path, "elastic_jobs", "id", "elastic state store")

    def write(self, jobs: Iterable[StoredElasticJob], gone: Iterable[str] = ()) -> None:
        """Write each job as it is now (an :attr:`~StoredElasticJob.empty` one is
        deleted) and delete the jobs ``gone``, all in one transaction."""
        puts, deletes = [], list(gone)
        for job in jobs:
            if job.empty:
                deletes.append(job.job_id)
            else:
                puts.append((job.job_id, _body(job)))
        self._put_rows(puts, deletes)

    def load(self) -> list[StoredElasticJob]:
        """Every stored job, oldest first (then by id)."""
        try:
            jobs = [_job(json.loads(body)) for _, body in self._rows()]
        except (ValueError, KeyError, TypeError) as exc:
            raise StateError(f"the elastic state store {self.path} is damaged: {exc}") from None
        return sorted(jobs, key=lambda j: (j.submitted, j.job_id))
