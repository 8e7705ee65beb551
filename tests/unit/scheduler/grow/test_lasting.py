"""An owner's lasting refusal (issue 27 item 4): ``lasting = true`` on a veto
(a policy's ``policy_args``, or a Refusal an owner's subclass returns) travels
from the host through the Enactor to the Scheduler, which then stops asking
that host for that request; other hosts still may take it."""

from __future__ import annotations

from legionrm.hostobj.policies import Policy, load_policy
from legionrm.inprocess import LocalSystem
from legionrm.models import (
    ClassSpec,
    ClusterSpec,
    HostSpec,
    Identity,
    ObjectRequest,
    SchedulingRequest,
)
from legionrm.testing import FakeClock

ASKED: list[str] = []


class NoAlice(Policy):
    """Refuses alice's reservations (counting every ask)."""

    def admit_reservation(self, host, request):
        ASKED.append(host.name)
        return self.refuse(host, "policy.test", "not for alice") if request.holder.user == "alice" else True


def system(lasting: bool) -> LocalSystem:
    """h0 (the biggest, asked first) refuses alice; h1 is too busy for now."""
    policy_args = {"lasting": True} if lasting else {}
    spec = ClusterSpec(hosts=(
        HostSpec(name="h0", attributes={"cpus": 8, "memory_gb": 16},
                 policy="tests.unit.scheduler.grow.test_lasting:NoAlice", policy_args=policy_args),
        HostSpec(name="h1", attributes={"cpus": 4, "memory_gb": 16}),
    ), classes=(ClassSpec(name="W"),))
    return LocalSystem(spec, clock=FakeClock())


def req(rid: str, user: str = "alice", avoid: tuple[str, ...] = ()) -> SchedulingRequest:
    return SchedulingRequest(request_id=rid, identity=Identity(user=user), replans=0,
                             objects=(ObjectRequest(class_name="W", cpus=4, memory_gb=1, avoid_hosts=avoid),))


def busy(s: LocalSystem) -> None:
    """Fill h1 (bob's work, kept off h0)."""
    assert s.scheduler.scheduleObjects(req("busy", user="bob", avoid=("h0",))).ok


def test_the_policy_argument_marks_its_refusals_lasting() -> None:
    assert load_policy("AllowUsers", {"names": ["bob"], "lasting": True}).lasting is True
    assert load_policy("AllowUsers", {"names": ["bob"]}).lasting is False


def test_a_lasting_veto_reaches_the_scheduler_and_the_host_is_not_asked_again() -> None:
    s = system(lasting=True)
    busy(s)
    ASKED.clear()
    r = s.scheduler.scheduleObjects(req("r"))
    assert r.state == "pending", r.message
    assert any(f.lasting and f.resource.endswith("h0") for f in r.failures)
    asked = len(ASKED)
    s.scheduler.cancel("busy")
    s.tick()
    info = s.scheduler.request_info("r")
    assert info.state == "running" and [i.host for i in info.instances] == ["h1"]
    assert len(ASKED) == asked  # h0 was not asked again


def test_a_plain_veto_is_asked_again() -> None:
    s = system(lasting=False)
    busy(s)
    ASKED.clear()
    r = s.scheduler.scheduleObjects(req("r"))
    assert r.state == "pending" and not any(f.lasting for f in r.failures)
    s.tick()
    assert len(ASKED) > 1
