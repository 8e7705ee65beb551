"""The elastic book survives a Scheduler restart: the cycle writes its jobs,
processes, investments, owed stops and pool charges to a SQLite file before
it acts; a "killed" cycle (the object dropped) is replaced by a fresh cycle
and core over the same cluster and file, which takes the book back (processes
still running are kept, those gone are forgotten, charges re-applied)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from legionrm.scheduler.elastic.cycle import ElasticCycle
from legionrm.scheduler.fairshare.classes import ResourceClassSpec
from legionrm.scheduler.fairshare.core import DuccCore
from legionrm.scheduler.watch import HostWatch
from legionrm.state import ElasticStore
from tests.unit.scheduler.elastic.test_cycle import World, job, world
from tests.unit.scheduler.elastic.test_cycle_pools import CountingGate


class Gate(CountingGate):
    """Pools of ``cpus`` cpus that outlive the Scheduler (a separate actor in the system)."""

    def __init__(self, cpus: float = 1000) -> None:
        super().__init__(cpus)

    def held(self) -> dict[str, str]:
        return {k: "/" for k in self.charged}


def crash_one(w: World) -> str:
    """Stop one of the cycle's processes at its host, as a crash would; its id."""
    victim = sorted(w.cycle.instance_ids())[0]
    host = next(n for n in w.group.names() if victim in {i.instance_id for i in w.host(n).list_instances()})
    w.host(host).stop_object(victim, "crashed")
    return victim


def cycle_of(w: World, path: Path, gate: Gate) -> ElasticCycle:
    """A Scheduler's cycle (fresh core) over ``w``'s cluster, its book in ``path``."""
    core = DuccCore(w.core.settings, [], [ResourceClassSpec("normal", policy="FAIR_SHARE")])
    watch = HostWatch(lambda n: w.group if n in w.group else None)
    c = ElasticCycle(core, w.cycle.enactor, w.cycle.stopper, w.collection, clock=w.clock, interval_s=10,
                     pools=gate, store=ElasticStore(path), watch=watch)
    return c


def booted(path: Path, gate: Gate, **kw) -> World:
    w = world(**kw)
    w.cycle = cycle_of(w, path, gate)
    w.core = w.cycle.core
    return w


def restart(w: World, path: Path, gate: Gate) -> int:
    """Kill the cycle (drop it, its store closed) and boot a fresh one that restores the book."""
    w.cycle.book.store.close()
    w.clock.advance(1)  # a restart takes time: request ids of the new process never repeat the old ones
    w.cycle = cycle_of(w, path, gate)
    w.core = w.cycle.core
    return w.cycle.restore()


def book(w: World) -> dict:
    """What must survive: jobs (request, class, age), processes (share -> job, instance, host),
    investments, and the core's shares on their machines."""
    c = w.cycle.ledger
    return {
        "jobs": {j: (e.request, e.ducc_class, w.core.jobs[j].submit) for j, e in c.jobs.items()},
        "shares": {sid: (job, inst.instance_id, inst.host) for sid, (job, inst) in c.inst.items()
                   if c.share(w.core, sid) is not None},
        "core": {sid: (s.job, s.machine, s.investment_ms) for j in w.core.jobs.values() for sid, s in j.shares.items()},
        # to be stopped: the stops owed, and the processes the core dropped (the next cycle reaps them)
        "stopping": set(c.owed) | {i.instance_id for sid, (_, i) in c.inst.items() if c.share(w.core, sid) is None},
    }


def running(w: World) -> set[str]:
    return {i.instance_id for n in w.group.names() for i in w.host(n).list_instances()}


def test_a_restarted_cycle_takes_back_jobs_processes_investments_and_charges(tmp_path) -> None:
    path, gate = tmp_path / "scheduler.db", Gate()
    w = booted(path, gate, hosts=2, memory_gb=16)
    w.cycle.submit(job("a", "ann"))
    w.cycle.submit(job("b", "bob"))
    r = w.run(2)
    assert r.jobs["a"].processes == r.jobs["b"].processes == 4
    ids = sorted(w.cycle.instance_ids())
    assert w.cycle.report_investment({iid: 10.0 * k for k, iid in enumerate(ids)}) == 8
    before, charged, live = book(w), dict(gate.charged), running(w)
    assert charged == {"elastic:a": 4, "elastic:b": 4}

    assert restart(w, path, gate) == 2
    assert book(w) == before and gate.charged == charged and running(w) == live
    assert w.cycle.instance_ids() == set(ids)
    r = w.run()  # a steady cycle: nothing grows, nothing stops, nothing doubles
    assert not r.grew and not r.shrank and running(w) == live
    assert {j: s.processes for j, s in r.jobs.items()} == {"a": 4, "b": 4}
    # the investments came back: an arrival evicts the least invested first
    w.cycle.submit(job("c", "cat"))
    r = w.run()
    invest = {iid: 10.0 * k for k, iid in enumerate(ids)}
    for jid in ("a", "b"):
        gone = [invest[c.instance_id] for c in r.shrank if c.job_id == jid]
        kept = [invest[i.instance_id] for i in r.jobs[jid].instances]
        assert gone and max(gone) < min(kept)


def test_processes_that_ended_while_it_was_down_are_forgotten_and_regrown(tmp_path) -> None:
    path, gate = tmp_path / "s.db", Gate()
    w = booted(path, gate, hosts=2, memory_gb=16)
    w.cycle.submit(job("a", "ann"))
    w.run(2)
    victim = crash_one(w)
    w.worker.instance_stopped(victim)
    restart(w, path, gate)
    assert victim not in w.cycle.instance_ids() and len(w.cycle.instance_ids()) == 7
    r = w.run()  # the core freed its share: the job grows back to its share
    assert r.jobs["a"].processes == 8 and len(r.grew) == 1 and victim not in running(w)


def test_a_completed_job_and_a_stop_that_failed_are_finished_after_the_restart(tmp_path) -> None:
    path, gate = tmp_path / "s.db", Gate()
    w = booted(path, gate, hosts=2, memory_gb=16)
    w.cycle.submit(job("a", "ann"))
    w.cycle.submit(job("b", "bob"))
    w.run(2)
    assert w.cycle.complete("a")  # written down; the dead cycle never stopped its processes
    a_procs = {i for i, sid in w.cycle.ledger.share_of.items() if w.cycle.ledger.inst[sid][0] == "a"}
    assert gate.charged == {"elastic:b": 4}
    restart(w, path, gate)
    assert "a" not in w.cycle.ledger.jobs and a_procs == set(w.cycle.ledger.owed)
    r = w.run()
    assert {c.instance_id for c in r.shrank} == a_procs and not a_procs & running(w)
    assert len(ElasticStore(path).load()) == 1  # a's row went with its last process
    r = w.run()
    assert r.jobs["b"].processes == 8 and gate.charged == {"elastic:b": 8}


def test_a_host_gone_while_it_was_down_and_a_stray_charge(tmp_path) -> None:
    path, gate = tmp_path / "s.db", Gate()
    w = booted(path, gate, hosts=2, memory_gb=16)
    w.cycle.submit(job("a", "ann"))
    w.run(2)
    gate.charged["elastic:ghost"] = 1  # charged by a Scheduler that died before writing the job down
    on_h2 = {i.instance_id for i in w.host("h2").list_instances()}
    assert len(on_h2) == 4
    w.collection.leave("h2")  # the host left the system while the Scheduler was down
    restart(w, path, gate)
    assert "elastic:ghost" not in gate.charged
    w.clock.advance(10)
    w.beat("h2")
    r = w.cycle.run_once()
    assert not on_h2 & w.cycle.instance_ids() and r.jobs["a"].processes == 4
    assert gate.charged == {"elastic:a": 4}


def test_an_unbooked_store_is_empty_and_restore_is_harmless(tmp_path) -> None:
    path, gate = tmp_path / "s.db", Gate()
    w = booted(path, gate, hosts=1, memory_gb=16)
    assert restart(w, path, gate) == 0 and book(w)["jobs"] == {} and gate.charged == {}


OPS = st.lists(st.one_of(
    st.tuples(st.just("submit"), st.sampled_from(["j1", "j2", "j3"]), st.sampled_from(["ann", "bob"])),
    st.tuples(st.just("run"), st.integers(1, 2), st.none()),
    st.tuples(st.just("complete"), st.sampled_from(["j1", "j2", "j3"]), st.none()),
    st.tuples(st.just("cap"), st.sampled_from(["j1", "j2", "j3"]), st.integers(0, 5)),
    st.tuples(st.just("crash"), st.sampled_from(sorted({"h1", "h2"})), st.none()),
), max_size=12)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_any_history_then_a_restart_gives_the_same_book(tmp_path_factory, ops) -> None:
    path, gate = tmp_path_factory.mktemp("book") / "s.db", Gate()
    w = booted(path, gate, hosts=2, memory_gb=16)
    for op, a, b in ops:
        if op == "submit" and a not in w.cycle.ledger.jobs and a not in w.core.jobs:
            w.cycle.submit(job(a, b))
        elif op == "run":
            w.run(a)
        elif op == "complete":
            w.cycle.complete(a)
        elif op == "cap" and a in w.cycle.ledger.jobs:
            w.cycle.update(a, max_processes=b)
        elif op == "crash":  # a process ends by itself (the cycle is told)
            mine = sorted(i.instance_id for i in w.host(a).list_instances())
            if mine:
                w.host(a).stop_object(mine[0], "crashed")
                w.worker.instance_stopped(mine[0])
                w.cycle.instance_gone(mine[0], "crashed")
    before, charged, live = book(w), dict(gate.charged), running(w)
    restart(w, path, gate)
    assert book(w) == before and gate.charged == charged and running(w) == live
    w.run()
    assert running(w) == w.cycle.instance_ids()  # nothing orphaned, nothing doubled


def test_with_a_watch_a_process_that_ended_by_itself_is_noticed_and_regrown(tmp_path) -> None:
    path, gate = tmp_path / "s.db", Gate()
    w = booted(path, gate, hosts=2, memory_gb=16)
    w.cycle.submit(job("a", "ann"))
    w.run(2)
    victim = crash_one(w)  # nobody tells the cycle
    r = w.run()  # the watch notices it; the core frees its share and the job grows back at once
    assert victim not in w.cycle.instance_ids() and r.jobs["a"].processes == 8 and len(r.grew) == 1
    assert victim not in {i.instance_id for i in w.worker.list_instances()}  # its class was told
    assert {s.instance.instance_id for j in ElasticStore(path).load() for s in j.shares} == w.cycle.instance_ids()
