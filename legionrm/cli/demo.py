"""``legionrm demo``: the whole system, live, on a local Ray of three nodes.

The tour, in the order a request flows:

1. a lean local Ray (a head and two worker nodes) and the bundled cluster
   booted onto it: the Collection, one host-group actor per nodepool, the
   vaults, the class objects, the Enactor and the Scheduler; two more hosts,
   ``ray-a`` and ``ray-b``, are the real Ray worker nodes; the gateway (the
   front door, :mod:`legionrm.gateway`) served on 127.0.0.1 over them;
2. the front door: alice holds one credentials file and nothing else (no
   Ray, no ``LEGIONRM_HOME``); her ``legionrm submit --wait``, ``logs`` and
   ``list`` are signed HTTP calls to the gateway, and her shell line runs
   on a Ray node as her OS account, its output kept;
3. MIL queries on the Collection, as a user and as a visitor the owners keep out;
4. ``scheduleObjects`` for two big Workers: the first master schedule puts
   one on lab1, whose owner's load ceiling vetoes it, and the Enactor moves to
   a delta schedule, keeping the reservation it already holds;
5. Echo instances started as Ray actors on the reserved Ray nodes,
   answering a call that says where they run;
6. the queue: a request waits for room, a cancel frees it;
7. carol's Counter, submitted through the gateway, counts on one Ray node,
   migrates to the other (the new copy started first, the state through the
   nodes' vault), is deactivated (its state saved to the vault, nothing
   running) and activated again on the first node: the count survives each move;
8. three users' elastic jobs arriving one after another: each cycle the
   fair-share core re-balances the batch pool among them;
9. shutdown: the gateway, every actor and every Ray node stop; nothing is left running.

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
import getpass
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from legionrm import codes
from legionrm.auth import CallSigner, Registry
from legionrm.auth.guard import auth_home, ensure_home, signer_for
from legionrm.cli.output import counted
from legionrm.cli.shell import result_table
from legionrm.client.client import Client
from legionrm.client.credentials import Credentials
from legionrm.client.errors import GatewayError
from legionrm.config import load_cluster
from legionrm.system import call, instance_actor, local_cluster, node_ids
from legionrm.gateway.app import make_app
from legionrm.gateway.control import RayControlPlane
from legionrm.gateway.serve import in_thread
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
from legionrm.system import boot

RAY_HOSTS = {"ray-a": "node_a", "ray-b": "node_b"}
USERS = ("alice", "bob", "carol", "dave", "visitor", "mallory")
ADMIN = "admin"


def work_account() -> str:
    """The OS account the demo users' shell work runs as: ``nobody`` for a root service
    (which never runs work as root), else the service's own (the only one it may run as)."""
    return "nobody" if os.geteuid() == 0 else getpass.getuser()


class Users:
    """The demo's registry (in a temp dir), a signer per user, and (once the gateway
    serves) a credentials file and a :class:`Client` per user."""

    def __init__(self) -> None:
        self.home = tempfile.mkdtemp(prefix="lrm-demo-home")
        ensure_home(self.home, operator=ADMIN)
        registry = Registry(auth_home(self.home))
        self._keys = {u: registry.add_user(u, os_user=work_account()).private_key for u in USERS}
        self._signers: dict[str, CallSigner] = {}
        self.credentials: dict[str, Path] = {}
        self._clients: dict[str, Client] = {}

    def hand_out(self, url: str) -> None:
        """Write each user's credentials file (0600) for the gateway at ``url``, as `user add` does."""
        for u, key in self._keys.items():
            self.credentials[u] = Credentials.of(url, u, key).write(Path(self.home) / f"{u}.credentials")

    def client(self, user: str) -> Client:
        """``user``'s Python client, holding only their credentials file."""
        if user not in self._clients:
            self._clients[user] = Client.from_credentials(self.credentials[user])
        return self._clients[user]

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
        for c in self._clients.values():
            c.close()
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
        with in_thread(make_app(RayControlPlane(users.home), users.home)) as url:
            users.hand_out(url)
            console.print(f"[green]up[/] in {time.perf_counter() - t0:.1f} s: "
                          f"{counted(len(spec.hosts) + len(spec.vaults), 'resource')} "
                          f"({counted(len(spec.hosts) - len(system.nodes), 'host')} in "
                          f"{counted(len(system.groups), 'host group')}, {counted(len(system.nodes), 'Ray node')}, "
                          f"{counted(len(spec.vaults), 'vault')}), {counted(len(spec.classes), 'class')}; "
                          f"the gateway at {url}")
            ok = all((
                _front_door(console, system, users),
                _queries(console, system, users),
                _veto_and_delta(console, system, users),
                _ray_instances(console, system, call, nodes, users),
                _queue_and_cancel(console, system, call, users),
                _mobility(console, system, call, nodes, users),
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

HELLO = """\
[[object]]
class_name = "Command"
cpus = 0.5
memory_gb = 0.1
walltime_s = 60
args = { command = "echo hello from $(id -un) on $(hostname); echo the load: $(cut -d' ' -f1-3 /proc/loadavg)" }
"""
RAY_NODES = '$name == "ray-a" or $name == "ray-b"'


def _front_door(console: Console, system: Any, users: Users) -> bool:
    """alice's own shell: her credentials file and the ``legionrm`` command, nothing else."""
    console.rule("1. the front door: alice holds one credentials file, and nothing else")
    request = Path(users.home) / "hello.toml"
    request.write_text(HELLO, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "LEGIONRM_"))}
    env["LEGIONRM_CREDENTIALS"] = str(users.credentials["alice"])
    console.print(f"LEGIONRM_CREDENTIALS={users.credentials['alice']} (mode "
                  f"{users.credentials['alice'].stat().st_mode & 0o777:04o}); no Ray address, token or home; "
                  f"her work runs as the OS account {work_account()!r}")
    ok = True
    for argv in (["submit", str(request), "--id", "demo-hello", "--wait", "--wait-timeout", "60"],
                 ["logs", "demo-hello"], ["list"]):
        t = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "legionrm.cli", *argv], capture_output=True, text=True, env=env,
                              timeout=120, check=False)
        shown = " ".join(a if a != str(request) else request.name for a in argv)
        console.print(f"[bold]alice$[/] legionrm {shown}   [dim]({(time.perf_counter() - t) * 1000:.0f} ms)[/]",
                      highlight=False)
        for line in (done.stdout + done.stderr).rstrip().splitlines():
            console.print(f"  {line}", highlight=False, markup=False)
        ok &= done.returncode == 0
    out = users.client("alice").logs("demo-hello").stdout
    ok &= out.startswith(f"hello from {work_account()}")
    _wait_idle(system, RAY_NODES, 2)  # the next steps want the Ray nodes' cpus back
    return ok


def _queries(console: Console, system: Any, users: Users) -> bool:
    console.rule("2. the Collection, queried in MIL")
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
    console.rule("3. scheduleObjects: a veto, then a delta schedule")
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
    console.rule("4. instances as Ray actors on the reserved nodes")

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
    console.rule("5. the queue: a request waits for room, a cancel frees it")
    # ray-a has 1 cpu and step 4's Echo holds half: a 0.4-cpu Echo fits, a second one waits
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


def _mobility(console: Console, system: Any, call: Any, nodes: dict[str, str], users: Users) -> bool:
    console.rule("6. an object moves and rests, keeping its state: migrate, deactivate, activate")
    carol, door = users.system(system, "carol"), users.client("carol")
    door.submit({"object": [{"class_name": "Counter", "cpus": 0.2, "memory_gb": 0.1,
                             "constraint": '$name == "ray-a"'}]}, id="demo-counter")
    try:  # it may wait a heartbeat or two, until the Collection sees step 5's cpus free again
        info = door.wait("demo-counter", timeout=30, poll_s=0.2, until=("running", "completed", "failed", "cancelled"))
    except GatewayError as exc:
        console.print(f"  [red]failed[/]: {exc}")
        return False
    if info.state != "running":
        console.print(f"  [red]failed[/]: {info.state}: {info.reason}")
        return False
    oid = info.instances[0].id
    count = call([instance_actor(oid).increment.remote() for _ in range(3)], 30)[-1]
    console.print(f"  carol submits a Counter through the gateway: {oid} on {info.instances[0].host}, counts to {count}")
    ok = True
    for verb, where in (("migrate", "ray-b"), ("deactivate", None), ("activate", "ray-a")):
        t = time.perf_counter()
        got = (carol.deactivate(oid) if where is None else
               carol.migrate(oid, f'$name == "{where}"') if verb == "migrate" else carol.activate_on(oid, f'$name == "{where}"'))
        took = (time.perf_counter() - t) * 1000
        said = f"  legionrm {verb} {oid}" + (f" {'--to' if verb == 'migrate' else '--on'} '$name == \"{where}\"'" if where else "")
        if not isinstance(got, ObjectStatus):
            console.print(f"{said}: [red]refused[/] by {got.by}: {got.code}: {got.reason}", highlight=False)
            ok = False
            break
        if got.instance is None:  # deactivated: inert, its state in a vault
            console.print(f"{said}: {got.state}, {got.saved_bytes} bytes of state in {got.vault}, nothing of it runs "
                          f"({took:.0f} ms)", highlight=False)
            ok &= got.state == "inert" and got.vault is not None
            continue
        there = instance_actor(got.instance.instance_id)
        value, node = call([there.value.remote(), there.where.remote()], 30)
        same = value == count and got.host == where and node == nodes[RAY_HOSTS[where]]
        console.print(f"{said}: now {got.instance.instance_id} on {where} (Ray node {node[:12]}…), count "
                      + (f"[green]still {value}[/]" if same else f"[red]{value}, not {count}[/]") + f" ({took:.0f} ms)",
                      highlight=False)
        ok &= same
    door.cancel("demo-counter")
    return ok


def _elastic(console: Console, system: Any, call: Any, users: Users) -> bool:
    console.rule("7. three users' elastic jobs, re-balanced every cycle")
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
