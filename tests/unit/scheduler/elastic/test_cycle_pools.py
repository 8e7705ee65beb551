"""Elastic jobs go through the same pools as scheduleObjects work: admitted
at submission, charged what they hold after each cycle, released when done."""

from __future__ import annotations

import pytest

from legionrm.errors import SchedulingError
from legionrm.models import Refusal, SchedulingRequest
from legionrm.scheduler.elastic.charges import PoolCharges
from tests.unit.scheduler.elastic.test_cycle import job, world


class CountingGate:
    """A pool of ``cpus`` cpus: admits a request while the charges fit."""

    def __init__(self, cpus: float) -> None:
        self.cpus = cpus
        self.charged: dict[str, float] = {}

    def admit(self, request: SchedulingRequest) -> Refusal | None:
        need = sum(o.count * o.cpus for o in request.objects)
        if sum(self.charged.values()) + need > self.cpus:
            return Refusal(code="respool.entitlement", reason=f"{need} cpus do not fit", by="respool:/")
        self.charged[request.request_id] = need
        return None

    def release(self, request_id: str) -> None:
        self.charged.pop(request_id, None)


def test_an_elastic_job_is_charged_what_it_holds_and_released_when_done() -> None:
    w = world(hosts=2, memory_gb=16, cpus=64)
    gate = CountingGate(cpus=1000)
    w.cycle.charges = PoolCharges(gate)
    w.cycle.submit(job("j1", "alice"))
    assert gate.charged == {"elastic:j1": 1}
    report = w.cycle.run_once()
    held = report.jobs["j1"].processes
    assert held > 1 and gate.charged == {"elastic:j1": held}
    w.cycle.complete("j1")
    assert gate.charged == {}


def test_a_pool_that_cannot_admit_refuses_the_submission() -> None:
    w = world()
    w.cycle.charges = PoolCharges(CountingGate(cpus=0))
    with pytest.raises(SchedulingError, match="respool.entitlement"):
        w.cycle.submit(job("j1", "alice"))
    assert "j1" not in w.core.jobs


def test_growth_past_the_pool_keeps_the_last_charge_it_could_take() -> None:
    w = world(hosts=2, memory_gb=16, cpus=64)
    gate = CountingGate(cpus=2)
    w.cycle.charges = PoolCharges(gate)
    w.cycle.submit(job("j1", "alice"))
    w.cycle.run_once()
    assert gate.charged == {"elastic:j1": 1}  # the pool holds 2 cpus; the job grew past them
