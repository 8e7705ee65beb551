"""The commands that ask a running system: ``status`` and ``submit``
(``up`` and ``down`` are in :mod:`legionrm.cli.updown`).  Each takes
``--address`` (default: the system ``legionrm up`` started)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from legionrm import codes
from legionrm.cli.output import show, table
from legionrm.cli.work import exit_status, final_line, wait_for_end
from legionrm.cli.updown import read_state
from legionrm.collection.answering import Answering, answering
from legionrm.models import SchedulerResponse, SchedulerStatus
from legionrm.naming import COLLECTION, SCHEDULER, require_actor
from legionrm.request_file import load_request
from legionrm.system import call, init_connect, proof_for


def pool_json(pools: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The pools' vectors with units in every field name: cpu in cores,
    memory and disk in MB (Peloton's units, as configured), gpu in devices."""
    units = {"cpu": "cpu_cores", "memory": "memory_mb", "disk": "disk_mb", "gpu": "gpus"}
    out: dict[str, Any] = {}
    for path, p in pools.items():
        out[path] = {k: ({units.get(kk, kk): vv for kk, vv in v.items()} if isinstance(v, dict) else v)
                     for k, v in p.items()}
    return out


def status_dict(records: list[Any], sched: SchedulerStatus) -> dict[str, Any]:
    """What ``status --json`` prints: counts by kind (the same counting as ``up``)."""
    kinds: dict[str, int] = {}
    for r in records:
        kinds[r.kind] = kinds.get(r.kind, 0) + 1
    unavailable = sorted(r.name for r in records if not r.available)
    return {
        "resources": len(records), "hosts": kinds.get("host", 0), "vaults": kinds.get("vault", 0),
        "available": len(records) - len(unavailable), "unavailable": unavailable,
        "instances": sched.instances, "instances_by_host": dict(sorted(sched.hosts.items())),
        "last_cycle": sched.last_cycle,
        "elastic": {jid: {"user": j.user, "processes": j.processes, "target": j.target,
                          "memory_gb_per_process": j.memory_gb} for jid, j in sorted(sched.elastic.items())},
        "pools": pool_json(sched.pools),
    }


def silent_resources(coll: Any, present: list[str], address: str | None) -> Answering:
    """Which resources do not answer, and why: the resources ``up`` booted
    (from its state file, unless another ``--address`` is asked) beside those
    the Collection holds and the writes it refused."""
    state = read_state() or {}
    expected = state.get("resources", []) if address in (None, state.get("address")) else []
    try:
        refused = call(coll.refused_writes.remote(proof=proof_for(coll, "refused_writes", {}, to=COLLECTION)))
    except AttributeError:  # a Collection from before it kept them
        refused = []
    return answering(expected, present, refused)


def cli_status(args: argparse.Namespace) -> int:
    """``legionrm status``: resources (and those that do not answer, with why),
    the Scheduler's instances, elastic jobs and pools."""
    init_connect(args.address or "auto")
    coll = require_actor(COLLECTION)
    silent: Answering | None = None  # what an administrator sees
    try:
        snap = call(coll.snapshot.remote(proof=proof_for(coll, "snapshot", {}, to=COLLECTION)))
        records = [snap.record(n) for n in snap.resource_names()]
        silent = silent_resources(coll, [r.name for r in records], args.address)
    except Exception as exc:  # a user (not an administrator): the resources their access allows
        if codes.AUTH_FORBIDDEN not in str(exc):
            raise
        ask = {"text": "true", "caller": None, "include_unavailable": True}
        records = list(call(coll.query.remote("true", None, True, proof=proof_for(coll, "query", ask, to=COLLECTION))).records)
    scheduler = require_actor(SCHEDULER)
    sched: SchedulerStatus = call(scheduler.status.remote(proof=proof_for(scheduler, "status", {}, to=SCHEDULER)))
    st = status_dict(records, sched)
    if silent is not None:
        st["answering"] = silent.as_json()
    if args.json:
        print(json.dumps(st, indent=2))
        return 0
    print(f"{st['resources']} resources ({st['hosts']} hosts, {st['vaults']} vaults), {st['available']} available"
          + (": unavailable " + ", ".join(st["unavailable"]) if st["unavailable"] else ""))
    if silent is not None and not silent.ok:
        print(silent.line())
    print(f"{sched.instances} instances started by scheduleObjects"
          + (": " + ", ".join(f"{h} {c}" for h, c in sorted(sched.hosts.items())) if sched.hosts else ""))
    if sched.elastic:
        t = table(f"elastic jobs after cycle {sched.last_cycle}", ("job", "user", "processes", "GB each"),
                  right=("processes", "GB each"))
        for jid, j in sorted(sched.elastic.items()):
            t.add_row(jid, j.user, f"{j.processes}/{j.target}", f"{j.memory_gb:g}")
        show(t)
    if sched.pools:
        t = table("pools (allocated / entitled)", ("pool", "cpus", "memory GB", "gpus"), right=("cpus", "memory GB", "gpus"))
        for path, p in sorted(sched.pools.items()):
            alloc, ent = p.get("allocation", {}), p.get("entitlement", {})
            t.add_row(path, f"{alloc.get('cpu', 0):g} / {ent.get('cpu', 0):.4g}",
                      f"{alloc.get('memory', 0) / 1024:g} / {ent.get('memory', 0) / 1024:.4g}",
                      f"{alloc.get('gpu', 0):g} / {ent.get('gpu', 0):.4g}")
        show(t)
    return 0


def cli_submit(args: argparse.Namespace) -> int:
    """``legionrm submit REQUEST.toml``: scheduleObjects on the running system.
    Exit 0 when every instance runs (or, for a request with a start ahead,
    every host is reserved), 1 when the request failed (each
    placement's failure is printed), 2 for a bad file.  With ``--wait``:
    block until it ends, print its final state and exit with its work's
    exit code (:func:`legionrm.cli.work.exit_status`)."""

    request = load_request(args.request)  # checked before touching Ray
    init_connect(args.address or "auto")
    scheduler = require_actor(SCHEDULER)
    proof = proof_for(scheduler, "scheduleObjects", {"request": request}, to=SCHEDULER)
    response: SchedulerResponse = call(scheduler.scheduleObjects.remote(request, proof=proof), 300)
    if getattr(args, "wait", False) and response.state in ("pending", "running", "reserved"):
        info = wait_for_end(scheduler, request.request_id, args.wait_timeout)
        if info is None:
            print(f"{request.request_id}: still not ended after {args.wait_timeout:g} s", file=sys.stderr)
            return 124
        print(info.model_dump_json(indent=2) if args.json else final_line(info))
        return exit_status(info)
    if args.json:
        print(response.model_dump_json(indent=2))
    elif response.ok:
        print(f"{request.request_id}: {response.message}")
        for inst in response.instances:
            print(f"  {inst.instance_id}  {inst.class_name:<10} on {inst.host}" + (f"  vault {inst.vault}" if inst.vault else ""))
    elif response.state == "pending":
        print(f"{request.request_id}: pending, waits in the queue ({response.failures[0].code if response.failures else 'queued'}); "
              f"`legionrm show {request.request_id}` follows it")
        return 0
    else:
        print(f"{request.request_id}: not scheduled ({response.masters} master schedules tried)")
        for f in response.failures:
            print(f"  {f.key:<12} {f.resource or '-':<10} {f.stage:<8} {f.code}: {f.reason}")
    return 0 if response.ok else 1
