"""Metrics recording never breaks the work it counts: with no Ray running the
calls return quietly (and do not start a Ray); vetoes are read from every
attempt of an enactment."""

from __future__ import annotations

import ray

from legionrm import metrics
from legionrm.models import EnactResult, PlacementFailure, ScheduleAttempt


def fail(code: str) -> PlacementFailure:
    return PlacementFailure(key="W#1", resource="lab1", code=code, reason="no")


def test_vetoes_are_read_from_every_attempt() -> None:
    result = EnactResult(ok=True, attempts=(
        ScheduleAttempt(master=0, deltas_tried=1, failures=(fail("policy.load"), fail("resource.dead")), succeeded=False),
        ScheduleAttempt(master=1, deltas_tried=0, failures=(fail("policy.load"),), succeeded=True)))
    assert sorted(metrics.vetoes_of(result)) == ["policy.load", "policy.load", "resource.dead"]


def test_recording_without_ray_is_quiet_and_starts_nothing() -> None:
    before = ray.is_initialized()  # under `make test` the session's Ray may be up already
    metrics.record_enactment(EnactResult(ok=False, attempts=(
        ScheduleAttempt(master=0, deltas_tried=0, failures=(fail("x"),), succeeded=False),)))
    metrics.record_queue_wait("/", 1.5)
    metrics.set_pending({"/": 2})
    metrics.set_pools([{"pool": "/", "resources": {"cpu": {"entitlement": 8.0, "allocation": 2.0, "fraction": 0.25}}}])
    metrics.set_processes([{"user": "alice", "class": "normal", "processes": 3}])
    metrics.set_host_load([{"kind": "host", "name": "b1", "load": 0.5}, {"kind": "vault", "name": "v", "load": 0.0}])
    assert ray.is_initialized() == before
