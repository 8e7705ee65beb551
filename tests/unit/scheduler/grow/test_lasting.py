"""An owner's lasting refusal (issue 27 item 4): ``lasting = true`` on a veto
(a policy's ``policy_args``, or a Refusal an owner's subclass returns) travels
from the host through the Enactor to the Scheduler, which then stops asking
that host for that request; other hosts still may take it.  The veto is
written with the request (a restarted scheduler keeps it), and lifted when
the host's owner mark changes: an administrator resumes the host, or its
owner's policy changes."""

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
from legionrm.state import RequestStore
from legionrm.testing import FakeClock
from tests.unit.scheduler.test_restart import restarted

ASKED: list[str] = []


class NoAlice(Policy):
    """Refuses alice's reservations (counting every ask)."""

    def admit_reservation(self, host, request):
        ASKED.append(host.name)
        return self.refuse(host, "policy.test", "not for alice") if request.holder.user == "alice" else True


def system(lasting: bool, store: RequestStore | None = None) -> LocalSystem:
    """h0 (the biggest, asked first) refuses alice; h1 is too busy for now."""
    policy_args = {"lasting": True} if lasting else {}
    spec = ClusterSpec(hosts=(
        HostSpec(name="h0", attributes={"cpus": 8, "memory_gb": 16},
                 policy="tests.unit.scheduler.grow.test_lasting:NoAlice", policy_args=policy_args),
        HostSpec(name="h1", attributes={"cpus": 4, "memory_gb": 16}),
    ), classes=(ClassSpec(name="W"),))
    return LocalSystem(spec, clock=FakeClock(), store=store)


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


def vetoed(s: LocalSystem) -> SchedulingRequest:
    """Alice's request ``r``, refused for good by h0 while h1 is busy: pending, h0 in its vetoes."""
    busy(s)
    r = s.scheduler.scheduleObjects(req("r"))
    assert r.state == "pending" and any(f.lasting for f in r.failures), r.message
    request = s.scheduler.book.get("r").request
    assert set(request.vetoed) == {"h0"} and "h0" in request.objects[0].avoid_hosts
    return request


def test_a_lasting_veto_is_written_with_its_request_and_a_restarted_scheduler_keeps_it(tmp_path) -> None:
    s = system(lasting=True, store=RequestStore(tmp_path / "r.db"))
    request = vetoed(s)
    stored = {i.request.request_id: i.request for i in RequestStore(tmp_path / "r.db").load()}
    assert stored["r"].vetoed == request.vetoed and "h0" in stored["r"].objects[0].avoid_hosts
    new = restarted(s, RequestStore(tmp_path / "r.db"))
    ASKED.clear()
    new.cancel("busy")
    s.tick()
    info = new.request_info("r")
    assert info.state == "running" and [i.host for i in info.instances] == ["h1"]
    assert ASKED == []  # the restarted scheduler did not ask h0 again


def test_resuming_the_host_lifts_its_lasting_vetoes() -> None:
    s = system(lasting=True)
    before = vetoed(s)
    s.tick()
    ASKED.clear()
    s.host("h0").resume()  # `legionrm resume h0`: its owner mark changes
    s.tick()
    assert ASKED and set(ASKED) == {"h0"}  # asked again (and it refuses alice again, for good)
    after = s.scheduler.book.get("r").request
    assert set(after.vetoed) == {"h0"} and after.vetoed["h0"] != before.vetoed["h0"]
    ASKED.clear()
    s.tick()
    assert ASKED == []  # under its new mark, not asked again


def test_an_owner_policy_change_lifts_it_and_the_host_takes_the_request() -> None:
    s = system(lasting=True)
    vetoed(s)
    s.host("h0").policy = load_policy("AllowUsers", {"names": ["alice"]})  # the owner lets alice in now
    s.tick()
    info = s.scheduler.request_info("r")
    assert info.state == "running" and [i.host for i in info.instances] == ["h0"], info.reason
    assert not s.scheduler.book.get("r").request.vetoed


def test_lifting_leaves_a_users_own_avoided_hosts_and_an_unseen_host_keeps_its_veto() -> None:
    from legionrm.scheduler.replan import lifted

    class Snap:
        def record(self, name: str):
            if name == "gone":
                raise KeyError(name)
            return type("R", (), {"attributes": {"owner_mark": "new"}})()

    r = req("x", avoid=("mine", "h0", "NoAlice@h0", "gone")).model_copy(update={"vetoed": {"h0": "old", "gone": "old"}})
    out = lifted(r, Snap)
    assert out is not None and out.vetoed == {"gone": "old"} and out.objects[0].avoid_hosts == ("mine", "gone")
    assert lifted(out, Snap) is None


def test_a_changed_request_is_written_even_when_its_state_and_reason_stay(tmp_path) -> None:
    """A pending request re-planned with the same reason keeps no new history, but a change to
    what it asks (a lasting veto's avoided host) is written, not only noted in memory."""
    s = system(lasting=True, store=RequestStore(tmp_path / "r.db"))
    book = s.scheduler.book
    entry = book.add(req("x"))
    vetoed_one = entry.request.model_copy(update={"vetoed": {"h0": "m"}})
    book.move(entry, "pending", entry.reason, request=vetoed_one)
    stored = {i.request.request_id: i.request for i in RequestStore(tmp_path / "r.db").load()}
    assert stored["x"].vetoed == {"h0": "m"} and len(book.get("x").history) == 1
