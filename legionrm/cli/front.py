"""The user verbs, through the front door: each is one or a few signed calls to the gateway.

``submit list show (--follow) wait logs explain cancel hosts pools status`` talk to
the gateway with the user's credentials (``--credentials FILE``, else
``$LEGIONRM_CREDENTIALS``, ``~/.legionrm/credentials``, or on the head the
home's administrator credentials); ``--as USER`` makes an administrator's
call as that user (refused for anyone else).  Every verb has ``--json``.
This module imports neither Ray nor numpy nor rich, so a ``list`` costs
little more than Python's start and one HTTP round trip
(``benchmarks/bench_cli.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterable

from legionrm.client.client import Client
from legionrm.collection.answering import Answering
from legionrm.errors import ConfigError
from legionrm.events.triggers import STATUSES
from legionrm.models import RefusedWrite
from legionrm.models.api import CancelResult, HostRow
from legionrm.models.requests import FINAL_STATES, RequestInfo, StatusEvent


def client(args: argparse.Namespace) -> Client:
    return Client.from_credentials(getattr(args, "credentials", None), as_user=getattr(args, "as_user", None))


def _age(t: float, now: float) -> str:
    s = max(0.0, now - t)
    return f"{s:.0f}s" if s < 120 else f"{s / 60:.0f}m" if s < 7200 else f"{s / 3600:.1f}h"


def starts(info: RequestInfo, now: float) -> str:
    """When a request asked to start: ``in 59m`` ahead, ``2m ago`` after, ``-`` for as soon as possible."""
    if info.start is None:
        return "-"
    return f"in {_age(now, info.start)}" if info.start > now else f"{_age(info.start, now)} ago"


def exit_status(info: RequestInfo) -> int:
    """What ``wait`` and ``submit --wait`` exit with: the work's exit code (``128 + signal`` for a run
    a signal ended, at most 255); a request that ended without one (it ran no command) exits 0 when
    completed, 1 otherwise."""
    if info.exit_code is not None:
        return max(0, min(255, info.exit_code))
    return 0 if info.state == "completed" else 1


def request_json(info: RequestInfo) -> dict[str, Any]:
    """One request as ``legionrm list --json`` prints it (times in seconds since the epoch)."""
    return {
        "id": info.id, "user": info.user, "state": info.state, "reason": info.reason,
        "classes": list(info.classes), "count": info.count, "pool": info.pool,
        "instances": [{"id": i.id, "host": i.host, "state": i.state,
                       "exit_code": i.result.exit_code if i.result else None} for i in info.instances],
        "submitted": info.submitted, "earliest_start": info.earliest_start, "start": info.start,
        "exit_code": info.exit_code,
    }


def columns(headers: tuple[str, ...], rows: Iterable[Iterable[Any]], right: tuple[str, ...] = ()) -> str:
    """A plain table: a header row, two spaces between columns, ``right`` columns right-aligned."""
    cells = [list(headers)] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    out = []
    for row in cells:
        parts = [c.rjust(w) if h in right else c.ljust(w) for c, w, h in zip(row, widths, headers)]
        out.append("  ".join(parts).rstrip())
    return "\n".join(out)


def request_rows(infos: list[RequestInfo], now: float) -> str:
    rows = [(i.id, i.state, "-" if i.exit_code is None else i.exit_code, i.user, ",".join(i.classes), i.count,
             ",".join(sorted({x.host for x in i.instances if x.state == "running"})) or "-",
             _age(i.submitted, now), starts(i, now), i.reason or "-") for i in infos]
    return columns(("id", "state", "exit", "user", "class", "count", "where", "age", "start", "reason"), rows,
                   right=("exit", "count", "age"))


# --- submit -----------------------------------------------------------------------------------


def _overrides(pairs: list[str] | None) -> dict[str, str]:
    out = {}
    for pair in pairs or ():
        key, eq, value = pair.partition("=")
        if not eq or not key:
            raise ConfigError(f"--set {pair!r}: give key=value (e.g. object.0.count=4)", file="--set")
        out[key.strip()] = value.strip()
    return out


def cli_submit(args: argparse.Namespace) -> int:
    """``legionrm submit FILE|- [--set k=v]... [--id NAME] [--wait]``: exit 0 placed (or queued),
    1 when it could not be scheduled."""
    try:
        text = sys.stdin.read() if args.request == "-" else Path(args.request).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", file=args.request) from None
    c = client(args)
    result = c.submit(text, set=_overrides(args.set), id=args.id)
    info = c.wait(result.id, timeout=args.wait_timeout) if args.wait and (result.ok or result.state == "pending") \
        else None
    if args.json:
        doc = json.loads(result.model_dump_json())
        if info is not None:
            doc["state"], doc["exit_code"] = info.state, info.exit_code
        print(json.dumps(doc, indent=2))
        if info is not None:
            return exit_status(info)
        return 0 if result.ok or result.state == "pending" else 1
    r = result.response
    if result.ok:
        print(f"{result.id}: {r.message or result.state}")
        for inst in r.instances:
            print(f"  {inst.instance_id}  {inst.class_name:<10} on {inst.host}" + (f"  vault {inst.vault}" if inst.vault else ""))
    elif result.state == "pending":
        print(f"{result.id}: " + (info.state if info else f"pending, waits in the queue "
                                  f"({r.failures[0].code if r.failures else 'queued'}); `legionrm show {result.id}`"))
    else:
        print(f"{result.id}: not scheduled ({r.masters} master schedules tried)")
        for f in r.failures:
            print(f"  {f.key:<12} {f.resource or '-':<10} {f.stage:<8} {f.code}: {f.reason}")
        return 1
    if info is not None:
        print(f"{info.id}: {info.state}" + (f" ({info.reason})" if info.reason else "")
              + (f"; exit code {info.exit_code}" if info.exit_code is not None else ""))
        return exit_status(info)
    return 0


# --- list / show / wait / logs / cancel ----------------------------------------------------------


def cli_list(args: argparse.Namespace) -> int:
    """``legionrm list [--user U] [--state S] [--watch] [--format FMT] [--json]``; ``--format`` is a
    Python format over ``list --json``'s fields, e.g. ``'{id} {state}'``."""
    c = client(args)
    while True:
        infos = c.list(args.user, args.state)
        if args.json:
            text = json.dumps({"requests": [request_json(i) for i in infos]}, indent=2)
        elif args.format:
            try:
                text = "\n".join(args.format.format(**request_json(i)) for i in infos)
            except (KeyError, IndexError, ValueError) as exc:
                raise ConfigError(f"--format: {exc!r} is not a field of a request (see list --json)",
                                  file="--format") from None
        else:
            text = request_rows(infos, time.time()) if infos else (
                "no requests" + (f" in state {args.state}" if args.state else ""))
        if not args.watch:
            print(text)
            return 0
        print(f"\033[H\033[J{time.strftime('%H:%M:%S')}  (every {args.watch:g} s; Ctrl-C stops)\n{text}", flush=True)
        time.sleep(args.watch)


def cli_show(args: argparse.Namespace) -> int:
    """``legionrm show ID [--follow [--timeout S]]``: its history, instances and the vetoes it met;
    with ``--follow`` then each status change as one line (a JSON object under ``--json``) until
    the request ends, ``--timeout`` passes or Ctrl-C."""
    c = client(args)
    if args.follow:
        return follow_events(lambda cursor: c.events(args.id, cursor), args.timeout, as_json=args.json,
                             ended=lambda: c.show(args.id).state in FINAL_STATES)
    info = c.show(args.id)
    if args.json:
        print(info.model_dump_json(indent=2))
        return 0
    print(f"{info.id} {info.state} ({info.user}, {info.count} x {','.join(info.classes)}, pool {info.pool})"
          + (f": {info.reason}" if info.reason else ""))
    if info.start is not None:
        print(f"  start {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(info.start))} ({starts(info, time.time())})")
    for e in info.history:
        print(f"  +{e.at - info.submitted:8.2f}s  {e.state:<10} {e.reason}")
    for i in info.instances:
        print(f"  instance {i.id} on {i.host}: {i.state}" + (f" ({i.reason})" if i.reason else ""))
    if info.failures:
        print(f"  vetoes and refusals met ({len(info.failures)}):")
        for f in info.failures[:20]:
            print(f"    {f.key} on {f.resource or '-'} ({f.stage}): {f.code}: {f.reason}")
    return 0


def cli_wait(args: argparse.Namespace) -> int:
    """``legionrm wait ID [--timeout S]``: until it ends; print its final state and exit with its
    work's exit code (128+signal when a signal ended it; 1 for an end without one but completed)."""
    info = client(args).wait(args.id, timeout=args.timeout)
    print(json.dumps(request_json(info)) if args.json else f"{info.id}: {info.state}"
          + (f" ({info.reason})" if info.reason else "")
          + (f"; exit code {info.exit_code}" if info.exit_code is not None else ""))
    return exit_status(info)


def cli_logs(args: argparse.Namespace) -> int:
    out = client(args).logs(args.id)
    if args.json:
        print(out.model_dump_json())
    else:
        sys.stdout.write(out.stdout)
        sys.stderr.write(out.stderr)
    return 0


def cli_cancel(args: argparse.Namespace) -> int:
    """``legionrm cancel ID... | --user U | --state S``: exit 1 when any was refused."""
    if not args.ids and not (args.user or args.state):
        raise ConfigError("give request ids, or --user / --state to cancel every match", file="cancel")
    result: CancelResult = client(args).cancel_many(args.ids, user=args.user, state=args.state)
    if args.json:
        print(result.model_dump_json(indent=2))
    else:
        for info in result.cancelled:
            print(f"{info.id}: {info.state}" + (f" ({info.reason})" if info.reason else ""))
        for rid, err in result.refused.items():
            print(f"{rid}: refused: {err.code}: {err.reason}")
        if not result.cancelled and not result.refused:
            print("nothing to cancel")
    return 1 if result.refused else 0


# --- explain / hosts / pools / status ----------------------------------------------------------


def cli_explain(args: argparse.Namespace) -> int:
    """``legionrm explain FILE [--host H]...``: the plan without enacting it; exit 1 when none."""
    text = Path(args.request).read_text(encoding="utf-8") if args.request != "-" else sys.stdin.read()
    plan = client(args).explain(text, hosts=args.host or ())
    if args.json:
        print(plan.model_dump_json(indent=2))
        return 0 if plan.suite.masters else 1
    suite = plan.suite
    print(f"{len(suite.masters)} master schedule(s)")
    for m, master in enumerate(suite.masters, 1):
        print(f"  master {m}: " + ", ".join(f"{p.key}@{p.host}" for p in master.placements))
        for d in master.deltas:
            print("    delta: " + ", ".join(f"{p.key}@{p.host}" for p in d.placements))
    for f in suite.failures:
        print(f"  {f.key} on {f.resource or '-'}: {f.code}: {f.reason}")
    for f in suite.refused:
        print(f"  refused {f.key:<14} {f.resource:<14} {f.code}: {f.reason}")
    for host, why in plan.hosts.items():
        print(f"  why {host}: {why}")
    return 0 if suite.masters else 1


def _num(v: float | None, fmt: str = "g") -> str:
    return "-" if v is None else format(v, fmt)


def host_lines(hosts: tuple[HostRow, ...]) -> str:
    return columns(("name", "state", "cpus free/total", "memory GB", "load", "owner policy", "pool", "drained"),
                   [(h.name, h.state, f"{_num(h.cpus_free)}/{_num(h.cpus_total)}", _num(h.memory_gb),
                     _num(h.load, ".2f"), h.owner_policy or "-", h.pool or "-", h.drained or "-") for h in hosts],
                   right=("cpus free/total", "memory GB", "load"))


def cli_hosts(args: argparse.Namespace) -> int:
    hosts = client(args).hosts().hosts
    print(json.dumps({"hosts": [h.model_dump() for h in hosts]}, indent=2) if args.json else
          host_lines(hosts) if hosts else "no hosts you may use")
    return 0


# --- several schedulers, drain, live changes (administrators) -----------------------------------


def cli_schedulers(args: argparse.Namespace) -> int:
    """``legionrm schedulers``: each scheduler, what it serves, its queue."""
    rows = client(args).schedulers().schedulers
    if args.json:
        print(json.dumps({"schedulers": [r.model_dump() for r in rows]}, indent=2))
        return 0
    def serves(r: Any) -> str:
        where = ", ".join(r.nodepools) or "every nodepool"
        return where if r.constraint == "true" else f"{where} where {r.constraint}"

    print(columns(("name", "serves", "pending", "running", "instances", "note"), [(
        r.name + (" (default)" if r.default else ""), serves(r), r.requests.get("pending", 0),
        r.requests.get("running", 0), r.instances, r.error or "") for r in rows],
        right=("pending", "running", "instances")))
    return 0


def cli_drain(args: argparse.Namespace) -> int:
    """``legionrm drain HOST --reason TEXT`` / ``legionrm resume HOST``."""
    c = client(args)
    done = c.drain(args.host, args.reason) if args.command == "drain" else c.resume(args.host)
    print(done.model_dump_json() if args.json else
          f"{done.host} drained: {done.drained}" if done.drained else f"{done.host} takes new work again")
    return 0


def _print_changes(changes: tuple[str, ...], as_json: bool) -> None:
    print(json.dumps({"changes": list(changes)}) if as_json else "\n".join(changes) or "nothing to change")


def cli_reload(args: argparse.Namespace) -> int:
    """``legionrm reload [--cluster FILE]``: the file's pools and schedulers applied live, all or nothing."""
    path = Path(args.cluster) if args.cluster else _running_cluster()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the cluster file: {exc.strerror}", file=str(path)) from None
    _print_changes(client(args).reload(text, str(path)).changes, args.json)
    return 0


def _running_cluster() -> Path:
    """The cluster file the running system runs (``up.json`` in the home: ``up``'s, or the last reload's)."""
    home = Path(os.environ.get("LEGIONRM_HOME", str(Path.home() / ".legionrm")))
    try:
        source = json.loads((home / "up.json").read_text()).get("cluster")
    except (OSError, ValueError, AttributeError):
        source = None
    if not source:
        raise ConfigError("the cluster file the system runs is not known here: give --cluster FILE",
                          file=str(home / "up.json"))
    return Path(source)


def cli_pool_edit(args: argparse.Namespace) -> int:
    """``legionrm pools create|update PATH KIND=RESERVATION:LIMIT[:SHARE]... [--default]``, ``pools delete PATH``."""
    if not args.rest:
        raise ConfigError(f"pools {args.file} needs the pool's path, e.g. /research", file="command line")
    path, kinds = args.rest[0], args.rest[1:]
    table: dict[str, Any] = {"path": path}
    for item in kinds:
        kind, _, nums = item.partition("=")
        parts = nums.split(":")
        try:
            values = [float(x) for x in parts]
        except ValueError:
            values = []
        if not kind or not 2 <= len(values) <= 3:
            raise ConfigError(f"{item!r} is not KIND=RESERVATION:LIMIT[:SHARE] (cpu=0:4)", file="command line")
        table[kind] = dict(zip(("reservation", "limit", "share"), values))
    if getattr(args, "default", False):
        table["default"] = True
    _print_changes(client(args).edit_pool(args.file, table).changes, args.json)
    return 0


def pool_json(pools: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The pools' vectors with units in every field name: cpu in cores,
    memory and disk in MB (Peloton's units, as configured), gpu in devices."""
    units = {"cpu": "cpu_cores", "memory": "memory_mb", "disk": "disk_mb", "gpu": "gpus"}
    return {path: {k: ({units.get(kk, kk): vv for kk, vv in v.items()} if isinstance(v, dict) else v)
                   for k, v in p.items()} for path, p in pools.items()}


def pool_lines(pools: dict[str, dict[str, Any]]) -> str:
    rows = []
    for path, p in sorted(pools.items()):
        alloc, ent = p.get("allocation", {}) or {}, p.get("entitlement", {}) or {}
        rows.append((path, f"{alloc.get('cpu', 0):g} / {ent.get('cpu', 0):.4g}",
                     f"{alloc.get('memory', 0) / 1024:g} / {ent.get('memory', 0) / 1024:.4g}",
                     f"{alloc.get('gpu', 0):g} / {ent.get('gpu', 0):.4g}"))
    return "pools (allocated / entitled)\n" + columns(("pool", "cpus", "memory GB", "gpus"), rows,
                                                      right=("cpus", "memory GB", "gpus"))


def cli_pools(args: argparse.Namespace) -> int:
    pools = client(args).pools().pools
    print(json.dumps({"pools": pools}, indent=2) if args.json else pool_lines(pools) if pools else "no pools")
    return 0


def cli_status(args: argparse.Namespace) -> int:
    """``legionrm status``: the gateway, the Scheduler's summary (as the caller may see it), the hosts."""
    c = client(args)
    st, hosts = c.status(), c.hosts().hosts
    if args.json:
        doc = json.loads(st.model_dump_json())
        if doc.get("scheduler"):
            doc["scheduler"]["pools"] = pool_json(doc["scheduler"]["pools"])
        print(json.dumps({"gateway": c.credentials.url, **doc, "hosts": [h.model_dump() for h in hosts]}, indent=2))
        return 0
    print(f"gateway {c.credentials.url} (legionrm {st.version}), you are {st.user}")
    for e in st.errors:
        print(f"  ! {e}")
    up = sum(h.state != "off" for h in hosts)
    print(f"{len(hosts)} hosts you may use, {up} available")
    if st.answering is not None:  # an administrator: every resource the system booted answers, or why not
        a = st.answering
        print(Answering(total=a["total"], silent=tuple(a["not_answering"]),
                        refusals=tuple(RefusedWrite(**r) for r in a["refusals"])).line())
    s = st.scheduler
    if s is not None:
        print(f"{s.instances} instances" + (": " + ", ".join(f"{h} {n}" for h, n in sorted(s.hosts.items())) if s.hosts else "")
              + ("; requests " + ", ".join(f"{k} {v}" for k, v in sorted(s.requests.items())) if s.requests else ""))
        if s.pools:
            print(pool_lines(s.pools))
    return 0


# --- show --follow -------------------------------------------------------------------------------


STATUS_WIDTH = max(map(len, STATUSES))
"""The status column's width: the longest status a trigger may fire (``deactivated``)."""
ENDING = frozenset({"ended", "failed", "cancelled"})
"""The request-level statuses after which there is nothing more to follow."""


def event_line(e: StatusEvent) -> str:
    """One status change as ``show --follow`` prints it."""
    when = time.strftime("%H:%M:%S", time.localtime(e.at))
    what = f"{e.request_id}" + (f" {e.object_id}" if e.object_id else "")
    return f"{when}  {e.status:<{STATUS_WIDTH}} {what}" + (f": {e.reason}" if e.reason else "")


def follow_events(fetch: Callable[[int], list[StatusEvent]], timeout_s: float | None, *, as_json: bool = False,
                  ended: Callable[[], bool] = lambda: False, out: Any = None, poll_s: float = 0.5,
                  sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> int:
    """Print each event ``fetch(cursor)`` gives (every one after ``cursor``)
    as one line, until the request's own event says it ended (0), or a poll
    brings nothing and ``ended()`` says it has ended anyway (0: its events
    were not kept, e.g. the Scheduler restarted), or ``timeout_s`` passes (0,
    with a note on stderr), or Ctrl-C (130, no traceback)."""
    out = out or sys.stdout
    deadline = None if timeout_s is None else clock() + timeout_s
    cursor = 0
    try:
        while True:
            events = fetch(cursor)
            for e in events:
                cursor = max(cursor, e.seq)
                print(e.model_dump_json() if as_json else event_line(e), file=out, flush=True)
                if e.object_id is None and e.status in ENDING:
                    return 0
            if not events and ended():
                return 0
            if deadline is not None and clock() >= deadline:
                print(f"stopped following after {timeout_s:g} s", file=sys.stderr)
                return 0
            sleep(poll_s)
    except KeyboardInterrupt:
        print("stopped following", file=sys.stderr)
        return 130
