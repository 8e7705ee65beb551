"""A request back from the queue after a host's veto is enacted anew under
fresh reservation ids (``<id>~tN``): the host that answered the first
attempt is never asked the same reservation id again, so the requeue
succeeds instead of failing ``request.conflict``."""

from __future__ import annotations

from legionrm.hostobj.policies import Policy
from legionrm.hostobj.runner.instances import request_of
from legionrm.inprocess import LocalSystem
from legionrm.models import ClassSpec, ClusterSpec, HostSpec, Identity, ObjectRequest, SchedulingRequest
from legionrm.testing import FakeClock


class VetoWhileAsked(Policy):
    """Refuses every start while ``vetoing`` (class-wide, so a test can lift it)."""

    vetoing = True

    def admit_start(self, host, token, class_name):
        return self.refuse(host, "policy.test", "not now") if VetoWhileAsked.vetoing else super().admit_start(
            host, token, class_name)


def test_a_veto_then_a_requeue_succeeds_with_fresh_reservation_ids() -> None:
    VetoWhileAsked.vetoing = True
    spec = ClusterSpec(hosts=(HostSpec(name="h0", attributes={"cpus": 4, "memory_gb": 8},
                                       policy="tests.unit.scheduler.test_requeue:VetoWhileAsked"),),
                       classes=(ClassSpec(name="W"),))
    s = LocalSystem(spec, clock=FakeClock())
    first = s.scheduler.scheduleObjects(SchedulingRequest(request_id="r", identity=Identity(user="alice"), replans=0,
                                                          objects=(ObjectRequest(class_name="W", cpus=1, memory_gb=1),)))
    assert not first.ok and first.state == "pending" and first.failures[0].code == "policy.test"
    VetoWhileAsked.vetoing = False
    s.tick()
    info = s.scheduler.request_info("r")
    assert info.state == "running", info.reason
    granted = [r.request.request_id for r in s.host("h0")._by_request.values()]
    assert len(set(granted)) == len(granted) and any("~t2/" in g for g in granted)


def test_the_request_a_reservation_was_made_for_reads_through_attempts_and_replans() -> None:
    assert [request_of(x) for x in ("r1/W#0/host/0", "r1~t3/W#0/host/0", "r1~t2~replan1/W#0/host/0", "r~x")] == [
        "r1", "r1", "r1", "r~x"]
