"""``legionrm demo``: the whole system, live, on a local Ray of three nodes.

The tour, in the order a request flows:

1. a lean local Ray (a head and two worker nodes) and the bundled cluster
   booted onto it: the Collection, one host-group actor per nodepool, the
   vaults, the class objects, the Enactor and the Scheduler; two more hosts,
   ``ray-a`` and ``ray-b``, are the real Ray worker nodes;
2. MIL queries on the Collection, as a user and as a visitor the owners keep out;
3. ``scheduleObjects`` for two big Workers: the first master schedule puts
   one on lab1, whose owner's load ceiling vetoes it, and the Enactor moves to
   a delta schedule, keeping the reservation it already holds;
4. Echo instances started as Ray actors on the reserved Ray nodes,
   answering a call that says where they run;
5. a Counter object migrates from one Ray node to the other: the new copy
   is started first, the old one's state goes through the nodes' vault into
   it, and the count survives;
6. three users' elastic jobs arriving one after another: each cycle the
   fair-share core re-balances the batch pool among them;
7. shutdown: every actor and every Ray node stops; nothing is left running.

The system checks who calls, as ``legionrm up``'s does: a registry in a temp
dir with the demo's users (alice, bob, carol, dave, a visitor and mallory, a
stranger to everyone's work) and an ``admin``; every call is signed as the
user who makes it, and mallory's attempt to stop bob's instance at its host
is refused with its code.

Runs in well under a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import tempfile
import time
from typing import Any

from rich.console import Console
from rich.table import Table

from legionrm import codes
from legionrm.auth import CallSigner, Registry
from legionrm.auth.guard import auth_home, ensure_home, signer_for
from legionrm.cli.shell import result_table
from legionrm.config import load_cluster
from legionrm.models import (
    CycleReport,
    ElasticJobRequest,
    HostSpec,
    Identity,
    ObjectRequest,
    ObjectStatus,
    SchedulerResponse,
    SchedulingRequest,
    VaultSpec,
)
from legionrm.naming import SCHEDULER, class_name, group_name
from legionrm.system import boot, call, instance_actor, local_cluster, node_ids

RAY_HOSTS = {"ray-a": "node_a", "ray-b": "node_b"}
USERS = ("alice", "bob", "carol", "dave", "visitor", "mallory")
ADMIN = "admin"


class Users:
    """The demo's registry (in a temp dir) and a signer per user."""

    def __init__(self) -> None:
        self.home = tempfile.mkdtemp(prefix="lrm-demo-home")
        ensure_home(self.home, operator=ADMIN)
        registry = Registry(auth_home(self.home))
        for u in USERS:
            registry.add_user(u)
        self._signers: dict[str, CallSigner] = {}

    def signer(self, user: str) -> CallSigner:
        if user not in self._signers:
            self._signers[user] = signer_for(self.home, user)
        return self._signers[user]

    def proof(self, user: str, call_name: str, args: Any, to: str = SCHEDULER) -> Any:
        """A proof that ``user`` makes ``call_name`` with ``args`` on the actor ``to``
        (the demo asks the Scheduler, unless it names another)."""
        return self.signer(user).sign(call_name, args, to=to)

    def system(self, system: Any, user: str) -> Any:
        """``system`` acting as ``user`` (its schedule and query signed as them)."""
        return dataclasses.replace(system, signer=self.signer(user))

    def remove(self) -> None:
        shutil.rmtree(self.home, ignore_errors=True)

BATCH_POOL = '$site == "uva" and $gpus == 0 and $memory_gb == 64'  # lab1 and batch1-3


def cli_main(args: argparse.Namespace) -> int:
    """Run the tour; returns 0 when every step did what it shows."""
    console = Console(highlight=False)
    t0 = time.perf_counter()

    spec = load_cluster(getattr(args, "cluster", None))
    spec = spec.model_copy(update={"hosts": spec.hosts + tuple(
        HostSpec(name=h, nodepool="ray", attributes={"site": "local", "ray_node": True}) for h in RAY_HOSTS),
        "vaults": spec.vaults + (VaultSpec(name="vault-local", serves=("ray-*",),  # keeps the Ray nodes' objects' state
                                           attributes={"storage_gb": 1.0, "serves": "ray-*", "site": "local"}),)})
    console.rule("[bold]legionrm demo")
    with console.status("starting a local Ray (a head and two worker nodes) ..."):
        cluster_cm = local_cluster(tuple(RAY_HOSTS.values()))
        cluster_cm.__enter__()
    system = None
    users = Users()
    try:
        nodes = node_ids(("head", *RAY_HOSTS.values()))
        with console.status("booting the collection, host groups, vaults, classes, enactor and scheduler ..."):
            system = boot(spec, ray_nodes={h: nodes[n] for h, n in RAY_HOSTS.items()}, heartbeat_s=0.5,
                          auth_home=users.home)
            system = users.system(system, ADMIN)
        console.print(f"every call is signed: users {', '.join(USERS)} and {ADMIN} (an administrator) "
                      f"in a registry under {users.home}")
        console.print(f"[green]up[/] in {time.perf_counter() - t0:.1f} s: {len(spec.hosts) + len(spec.vaults)} resources "
                      f"({len(spec.hosts) - len(system.nodes)} hosts in {len(system.groups)} host groups, "
                      f"{len(system.nodes)} Ray nodes, "
                      f"{len(spec.vaults)} vaults), {len(spec.classes)} classes")
        ok = all((
            _queries(console, system, users),
            _veto_and_delta(console, system, users),
            _ray_instances(console, system, call, nodes, users),
            _queue_and_cancel(console, system, call, users),
            _migration(console, system, call, nodes, users),
            _elastic(console, system, call, users),
        ))
    finally:
        with console.status("shutting down ..."):
            if system is not None:
                system.shutdown()
            cluster_cm.__exit__(None, None, None)
            users.remove()
    console.rule(f"[bold]{'done' if ok else 'done, with a step that went wrong'} in {time.perf_counter() - t0:.1f} s; "
                 "nothing left running")
    return 0 if ok else 1


# --- the steps --------------------------------------------------------------------------


def _queries(console: Console, system: Any, users: Users) -> bool:
    console.rule("1. the Collection, queried in MIL")
    text = '$arch == "x86_64" and $gpus == 0 and $memory_gb >= 64'
    mine = users.system(system, "alice").query(text, Identity(user="alice"))
    console.print(f"[bold]alice[/] asks: [cyan]{text}[/]")
    console.print(result_table(mine))
    gpu = '$gpus > 0'
    seen = {who: users.system(system, who).query(gpu, Identity(user=who)).names for who in ("alice", "visitor")}
    console.print(f"[cyan]{gpu}[/]: alice sees {seen['alice']}, visitor sees {seen['visitor'] or 'nothing'} "
                  "(the GPU owners deny the visitor account)")
    return bool(mine.names) and bool(seen["alice"]) and not seen["visitor"]


def _veto_and_delta(console: Console, system: Any, users: Users) -> bool:
    console.rule("2. scheduleObjects: a veto, then a delta schedule")
    request = SchedulingRequest(
        request_id="demo-workers", identity=Identity(user="alice"),
        objects=(ObjectRequest(class_name="Worker", count=2, cpus=12, memory_gb=8, placement="scatter",
                               constraint='$gpus == 0 and $site == "uva"'),),
    )

    suite = call(system.scheduler.make_schedules.remote(
        request, proof=users.proof("alice", "make_schedules", {"request": request})))
    table = Table("master", "placements", "deltas (alternatives for the likeliest failures)")
    for i, m in enumerate(suite.masters[:3], 1):
        deltas = "; ".join(", ".join(f"{p.key}->{p.host}" for p in d.placements) for d in m.deltas[:3])
        table.add_row(str(i), ", ".join(f"{p.key}->{p.host}" for p in m.placements), deltas or "-")
    console.print("alice asks for 2 Workers of 12 cpus, scattered, on x86 hosts at uva without GPUs:")
    console.print(table)
    r: SchedulerResponse = users.system(system, "alice").schedule(request)
    for a in r.enact.attempts if r.enact else ():
        for f in a.failures:
            console.print(f"  master {a.master + 1}: [red]{f.resource} vetoed {f.key}[/] ({f.code}: {f.reason})")
        if a.succeeded:
            console.print(f"  master {a.master + 1} succeeded after {a.deltas_tried} delta schedule(s); "
                          f"re-reservations (thrash): {r.enact.thrash}")
    for key, tok in sorted((r.enact.host_tokens if r.enact else {}).items()):
        holder = tok.holder.user + (f" ({tok.holder.class_name})" if tok.holder.class_name else "")
        console.print(f"  token {tok.token_id[:12]} for {key}: issued by {tok.issuer} to {holder}, "
                      f"{tok.resources.cpus:g} cpus, expires in {max(0.0, tok.expires_at - time.time()):.0f} s "
                      f"unless used; signed {tok.signature[:8]}...")
    _instances(console, r)
    vetoed = bool(r.enact and any(f.code == codes.POLICY_LOAD for a in r.enact.attempts for f in a.failures))
    # alice is done with them: the class object destroys its instances and the hosts free their capacity
    done = call([system.classes["Worker"].destroy_instance.remote(i.instance_id, "finished", proof=users.proof(
        "alice", "destroy_instance", {"instance_id": i.instance_id, "reason": "finished"}, class_name("Worker")))
        for i in r.instances])
    console.print(f"  alice's Workers finish: {sum(map(bool, done))} destroyed by the Worker class object")
    return r.ok and vetoed and r.enact.thrash == 0 and all(done)


def _ray_instances(console: Console, system: Any, call: Any, nodes: dict[str, str], users: Users) -> bool:
    console.rule("3. instances as Ray actors on the reserved nodes")

    r = users.system(system, "bob").schedule(SchedulingRequest(
        request_id="demo-echo", identity=Identity(user="bob"),
        objects=(ObjectRequest(class_name="Echo", count=2, cpus=0.5, memory_gb=0.1, placement="scatter"),),
    ))
    _instances(console, r)
    good = r.ok
    for inst in r.instances:
        answer = call(instance_actor(inst.instance_id).where.remote(), 30)
        expected = nodes[RAY_HOSTS[inst.host]]
        same = answer["node_id"] == expected
        good &= same
        console.print(f"  {inst.instance_id}.where() -> Ray node {answer['node_id'][:12]}…, "
                      f"{'[green]the node reserved for it[/]' if same else '[red]NOT the reserved node[/]'} ({inst.host})")
    return good and _stranger_refused(console, system, call, users, r.instances[0] if r.instances else None)


def _stranger_refused(console: Console, system: Any, call: Any, users: Users, inst: Any) -> bool:
    """mallory, who knows the id of bob's instance, asks its host to stop it."""
    if inst is None:
        return False
    args = {"items": [inst.instance_id], "reason": "mallory wants the node"}
    got = call(system.nodes[inst.host].stop_objects.remote(
        [inst.instance_id], "mallory wants the node", proof=users.proof("mallory", "stop_objects", args, inst.host)))[0]
    code = getattr(got, "code", "")
    console.print(f"  mallory asks {inst.host} to stop bob's {inst.instance_id}: "
                  + (f"[red]refused[/] by {got.by}: {code}" if code.startswith("auth.") else "[red]NOT refused[/]"))
    return code == codes.AUTH_NOT_OWNER


def _queue_and_cancel(console: Console, system: Any, call: Any, users: Users) -> bool:
    console.rule("4. the queue: a request waits for room, a cancel frees it")
    # ray-a has 1 cpu and step 3's Echo holds half: a 0.4-cpu Echo fits, a second one waits
    ask = dict(class_name="Echo", cpus=0.4, memory_gb=0.1, constraint='$name == "ray-a"')
    first = users.system(system, "carol").schedule(SchedulingRequest(request_id="demo-hold", identity=Identity(user="carol"),
                                              objects=(ObjectRequest(**ask),)))
    second = users.system(system, "dave").schedule(SchedulingRequest(request_id="demo-wait", identity=Identity(user="dave"),
                                               objects=(ObjectRequest(**ask),)))
    info = call(system.scheduler.request_info.remote("demo-wait", proof=users.proof(
        "dave", "request_info", {"request_id": "demo-wait"})))
    console.print(f"  demo-hold: {first.state}; demo-wait: [yellow]{info.state}[/] ({info.reason[:90]})", highlight=False)
    reason = "cancelled by its user"
    call(system.scheduler.cancel.remote("demo-hold", reason, proof=users.proof(
        "carol", "cancel", {"request_id": "demo-hold", "reason": reason})))
    console.print("  legionrm cancel demo-hold -> cancelled; its instance stops and its cpus come back")
    deadline = time.time() + 20
    while time.time() < deadline and info.state in ("pending", "admitted", "placing"):
        time.sleep(0.2)
        info = call(system.scheduler.request_info.remote("demo-wait", proof=users.proof(
            "dave", "request_info", {"request_id": "demo-wait"})))
    hosts = ", ".join(i.host for i in info.instances)
    console.print(f"  demo-wait: [green]{info.state}[/] on {hosts or '-'} "
                  f"({' -> '.join(e.state for e in info.history)})", highlight=False)
    call(system.scheduler.cancel.remote("demo-wait", reason, proof=users.proof(
        "dave", "cancel", {"request_id": "demo-wait", "reason": reason})))
    return first.ok and second.state == "pending" and info.state == "running"


def _migration(console: Console, system: Any, call: Any, nodes: dict[str, str], users: Users) -> bool:
    console.rule("5. an object migrates between Ray nodes, keeping its state")
    carol = users.system(system, "carol")
    r = carol.schedule(SchedulingRequest(request_id="demo-counter", identity=Identity(user="carol"), objects=(
        ObjectRequest(class_name="Counter", cpus=0.2, memory_gb=0.1, constraint='$name == "ray-a"'),)))
    # it may wait a heartbeat or two, until the Collection sees step 4's cpus free again
    deadline, args = time.time() + 30, {"request_id": "demo-counter"}
    info = call(system.scheduler.request_info.remote("demo-counter", proof=users.proof("carol", "request_info", args)))
    while info.state == "pending" and time.time() < deadline:
        time.sleep(0.2)
        info = call(system.scheduler.request_info.remote("demo-counter", proof=users.proof("carol", "request_info", args)))
    if info.state != "running":
        console.print(f"  [red]failed[/]: {info.state}: {info.reason or r.message}")
        return False
    oid = info.instances[0].id
    count = call([instance_actor(oid).increment.remote() for _ in range(3)], 30)[-1]
    t = time.perf_counter()
    moved = carol.migrate(oid, '$name == "ray-b"')
    took = (time.perf_counter() - t) * 1000
    if not isinstance(moved, ObjectStatus):
        console.print(f"  [red]migration refused[/]: {moved.code}: {moved.reason}")
        return False
    there = instance_actor(moved.instance.instance_id)
    value, node = call([there.value.remote(), there.where.remote()], 30)
    ok = value == count and moved.host == "ray-b" and node == nodes[RAY_HOSTS["ray-b"]]
    console.print(f"  carol's Counter {oid} counts to {count} on ray-a and migrates to ray-b in {took:.0f} ms")
    console.print(f"  now {moved.instance.instance_id} on Ray node {node[:12]}…, count "
                  + (f"[green]still {value}[/]" if ok else f"[red]{value}, not {count}[/]") + " (state via vault-local)")
    reason = "cancelled by its user"
    call(system.scheduler.cancel.remote("demo-counter", reason, proof=users.proof(
        "carol", "cancel", {"request_id": "demo-counter", "reason": reason})))
    return ok


def _elastic(console: Console, system: Any, call: Any, users: Users) -> bool:
    console.rule("6. three users' elastic jobs, re-balanced every cycle")
    ring, users = users, ("alice", "bob", "carol")
    console.print("each job asks for as many 8 GB processes as it can get in the batch pool "
                  "(lab1 and batch1-3: 32 processes); a job arrives before each cycle")
    _wait_idle(system, BATCH_POOL, 4)
    after = max((r.cycle for r in _reports(system, call, ring, 0, 0)), default=0)
    counts: list[int] = []
    for user in users:
        job = ElasticJobRequest(job_id=f"{user}-job", user=user, class_name="Worker", memory_gb=8, cpus=0.5,
                                time_per_item_ms=1000)
        call(system.scheduler.submit_elastic.remote(job, proof=ring.proof(user, "submit_elastic", {"request": job})))
        reports = _until(system, call, ring, after, lambda r: all(j.processes == j.target for j in r.jobs.values()))
        after = reports[-1].cycle
        console.print(_cycle_table(reports, users))
        counts = [reports[-1].jobs[f"{u}-job"].processes for u in users if f"{u}-job" in reports[-1].jobs]
    fair = len(counts) == 3 and max(counts) - min(counts) <= 1 and sum(counts) == 32
    console.print(f"[green]fair[/]: {counts} processes" if fair else f"[red]not fair[/]: {counts}")
    for user in users:
        call(system.scheduler.complete_elastic.remote(f"{user}-job", proof=ring.proof(
            user, "complete_elastic", {"job_id": f"{user}-job"})))
    reports = _until(system, call, ring, after, lambda r: not r.jobs)
    stopped, grew = sum(len(r.shrank) for r in reports), sum(len(r.grew) for r in reports)
    left = call(system.groups["batch"].list_instances.remote(proof=ring.proof(ADMIN, "list_instances", {"host": None},
                                                                                  group_name("batch"))))
    console.print(f"the jobs complete one by one: {stopped} processes stopped on their hosts "
                  f"({grew} grew in between into the space of a job that had finished); {len(left)} left running")
    return fair and not reports[-1].jobs and stopped == sum(counts) + grew and not left


def _wait_idle(system: Any, query: str, count: int, timeout_s: float = 15.0) -> None:
    """Until the Collection sees ``count`` hosts matching ``query`` idle (the
    hosts' next heartbeats carry what was freed)."""
    deadline = time.time() + timeout_s
    while len(system.query(f"({query}) and $instances == 0").names) < count and time.time() < deadline:
        time.sleep(0.2)


def _reports(system: Any, call: Any, users: Users, after: int, timeout_s: float) -> list[CycleReport]:
    """Cycle reports as the administrator sees them (every user's jobs)."""
    proof = users.proof(ADMIN, "cycle_reports", {"after": after, "timeout_s": timeout_s})
    return call(system.scheduler.cycle_reports.remote(after, timeout_s, proof=proof))


def _until(system: Any, call: Any, users: Users, after: int, done: Any, cycles: int = 6) -> list[CycleReport]:
    """The reports of the cycles after ``after`` (the runner's thread runs them
    on events; more are run here) until ``done(report)`` or ``cycles`` ran.
    DUCC frees an evicted process's space only once its exit is confirmed, so
    a newcomer grows in the cycle after the one that shrank the others."""
    reports = _reports(system, call, users, after, 30)
    while not done(reports[-1]) and len(reports) < cycles:
        call(system.scheduler.run_cycle.remote(proof=users.proof(ADMIN, "run_cycle", {})))
        reports = _reports(system, call, users, after, 0)  # with any the runner ran meanwhile
    return reports


def _cycle_table(reports: list[CycleReport], users: tuple[str, ...]) -> Table:
    last = reports[-1]
    first = reports[0].cycle
    span = f"cycle {first}" if first == last.cycle else f"cycles {first}-{last.cycle}"
    grew, shrank = sum(len(r.grew) for r in reports), sum(len(r.shrank) for r in reports)
    why = ", ".join(t for t in reports[0].triggers if not t.startswith("host-"))  # hosts join in the first cycle
    t = Table(title=f"{span} ({why or 'timer'}): {grew} processes started, {shrank} stopped, "
                    f"{sum(r.elapsed_ms for r in reports):.0f} ms", title_justify="left")
    t.add_column("user")
    t.add_column("processes", justify="right")
    t.add_column("share", min_width=34)
    t.add_column("hosts")
    for u in users:
        job = last.jobs.get(f"{u}-job")
        if job is None:
            t.add_row(u, "-", "", "not yet arrived")
            continue
        bar = "█" * job.processes + "·" * max(0, job.target - job.processes)
        t.add_row(u, f"{job.processes}/{job.target}", bar, ", ".join(f"{h}:{n}" for h, n in sorted(job.hosts.items())))
    return t


def _instances(console: Console, r: SchedulerResponse) -> None:
    if r.ok:
        for i in r.instances:
            console.print(f"  [green]running[/] {i.instance_id} ({i.class_name}) on {i.host}"
                          + (f" with vault {i.vault}" if i.vault else ""))
    else:
        console.print(f"  [red]failed[/]: {r.message}")
