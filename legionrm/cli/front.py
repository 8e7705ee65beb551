"""The user verbs, through the front door: each is one or a few signed calls to the gateway.

``submit list show (--follow) wait logs history explain cancel hosts pools status``, the queue's
``hold release update top`` and its views ``share prio`` talk to
the gateway with the user's credentials (``--credentials FILE``, else
``$LEGIONRM_CREDENTIALS``, ``~/.legionrm/credentials``, or on the head the
home's administrator credentials); ``--as USER`` makes an administrator's
call as that user (refused for anyone else).  Every verb has ``--json``.
This module imports neither Ray nor numpy nor rich, so a ``list`` costs
little more than Python's start and one HTTP round trip
(``benchmarks/bench_cli.py``): the verbs print from the gateway's JSON
documents (:class:`~legionrm.client.wire.Wire`), so no pydantic model is
imported either (the Python :class:`~legionrm.client.client.Client` types the
same documents).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from legionrm.cli.submitflags import depend_lines, request_text, submit_overrides
from legionrm.client.wire import ENDED, Doc, Wire
from legionrm.errors import ConfigError

TYPE_CHECKING = False  # typing's, without importing typing: a CLI call never loads it
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any


def client(args: argparse.Namespace) -> Wire:
    return Wire.from_credentials(getattr(args, "credentials", None), as_user=getattr(args, "as_user", None))


def _age(t: float, now: float) -> str:
    s = max(0.0, now - t)
    return f"{s:.0f}s" if s < 120 else f"{s / 60:.0f}m" if s < 7200 else f"{s / 3600:.1f}h"


def starts(info: Doc, now: float) -> str:
    """When a request (a ``RequestInfo`` document) asked to start: ``in 59m`` ahead, ``2m ago``
    after, ``-`` for as soon as possible."""
    start = info.get("start")
    if start is None:
        return "-"
    return f"in {_age(now, start)}" if start > now else f"{_age(start, now)} ago"


def exit_status(info: Doc) -> int:
    """What ``wait`` and ``submit --wait`` exit with: the work's exit code (``128 + signal`` for a run
    a signal ended, at most 255); a request that ended without one (it ran no command) exits 0 when
    completed, 1 otherwise."""
    if info.get("exit_code") is not None:
        return max(0, min(255, info["exit_code"]))
    return 0 if info["state"] == "completed" else 1


def request_json(info: Doc) -> dict[str, Any]:
    """One request (a ``RequestInfo`` document) as ``legionrm list --json`` prints it (times in
    seconds since the epoch)."""
    return {
        "id": info["id"], "user": info["user"], "state": info["state"], "reason": info.get("reason", ""),
        "classes": list(info.get("classes", ())), "count": info.get("count", 0), "pool": info.get("pool", "/"),
        "instances": [{"id": i["id"], "host": i["host"], "state": i["state"],
                       "exit_code": (i.get("result") or {}).get("exit_code")} for i in info.get("instances", ())],
        "submitted": info.get("submitted", 0.0), "earliest_start": info.get("earliest_start"),
        "start": info.get("start"), "exit_code": info.get("exit_code"), "qos": info.get("qos"),
        "hold": info.get("hold"),
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


def request_rows(infos: list[Doc], now: float) -> str:
    """``legionrm list``'s table of ``RequestInfo`` documents."""
    rows = [(d["id"], d["state"], "-" if d["exit_code"] is None else d["exit_code"], d["user"], ",".join(d["classes"]),
             d["count"], ",".join(sorted({x["host"] for x in d["instances"] if x["state"] == "running"})) or "-",
             _age(d["submitted"], now), starts(d, now), d["reason"] or "-") for d in map(request_json, infos)]
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


def ended_line(info: Doc) -> str:
    """``ID: STATE (reason); exit code N``: how ``wait`` and ``submit --wait`` say a request ended."""
    return (f"{info['id']}: {info['state']}" + (f" ({info['reason']})" if info.get("reason") else "")
            + (f"; exit code {info['exit_code']}" if info.get("exit_code") is not None else ""))


def cli_submit(args: argparse.Namespace) -> int:
    """``legionrm submit FILE|- [--set k=v]... [--id NAME] [--wait]``: exit 0 placed (or queued),
    1 when it could not be scheduled."""
    try:
        text = request_text(args.request)
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", file=args.request) from None
    c = client(args)
    result = c.submit(text, set={**_overrides(args.set), **submit_overrides(args)}, id=args.id)
    taken = result["ok"] or result["state"] == "pending"
    info = c.wait(result["id"], timeout=args.wait_timeout) if args.wait and taken else None
    if args.json:
        if info is not None:
            result["state"], result["exit_code"] = info["state"], info.get("exit_code")
        print(json.dumps(result, indent=2))
        return exit_status(info) if info is not None else 0 if taken else 1
    r, rid = result["response"], result["id"]
    if result["ok"]:
        print(f"{rid}: {r.get('message') or result['state']}")
        for inst in r.get("instances", ()):
            print(f"  {inst['instance_id']}  {inst['class_name']:<10} on {inst['host']}"
                  + (f"  vault {inst['vault']}" if inst.get("vault") else ""))
    elif result["state"] == "pending":
        failures = r.get("failures") or ()
        print(f"{rid}: " + (info["state"] if info else f"pending, waits in the queue "
                            f"({failures[0]['code'] if failures else 'queued'}); `legionrm show {rid}`"))
    elif result["state"] == "refused" and len(r.get("failures") or ()) == 1:  # refused at submit: what and why
        f = r["failures"][0]
        print(f"{rid}: refused by {f.get('resource') or '-'}: {f['code']}: {f['reason']}")
        return 1
    else:
        print(f"{rid}: not scheduled ({r.get('masters', 0)} master schedules tried)")
        for f in r.get("failures", ()):
            print(f"  {f['key']:<12} {f.get('resource') or '-':<10} {f.get('stage', ''):<8} {f['code']}: {f['reason']}")
        return 1
    if info is not None:
        print(ended_line(info))
        return exit_status(info)
    return 0


# --- list / show / wait / logs / cancel ----------------------------------------------------------


def cli_list(args: argparse.Namespace) -> int:
    """``legionrm list [--user U] [--state S] [--all] [--limit N] [--cursor C] [--watch] [--format FMT]
    [--json]``: the live and recent requests (``--all``: every one kept), a page at a time with
    ``--limit``; ``--format`` is a Python format over ``list --json``'s fields, e.g. ``'{id} {state}'``."""
    c = client(args)
    while True:
        page = c.list_page(args.user, args.state, all=getattr(args, "all", False), limit=getattr(args, "limit", None),
                           cursor=getattr(args, "cursor", None))
        infos, after = list(page.get("requests", ())), page.get("next")
        more = f"more: legionrm list{' --all' if getattr(args, 'all', False) else ''} --cursor {after}" if after else ""
        if args.json:
            text = json.dumps({"requests": [request_json(i) for i in infos], "next": after}, indent=2)
        elif args.format:
            try:
                text = "\n".join(args.format.format(**request_json(i)) for i in infos)
            except (KeyError, IndexError, ValueError) as exc:
                raise ConfigError(f"--format: {exc!r} is not a field of a request (see list --json)",
                                  file="--format") from None
        else:
            text = request_rows(infos, time.time()) if infos else (
                "no requests" + (f" in state {args.state}" if args.state else ""))
            text += f"\n{more}" if more else ""
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
                             ended=lambda: c.show(args.id)["state"] in ENDED)
    info = c.show(args.id)
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(f"{info['id']} {info['state']} ({info['user']}, {info['count']} x {','.join(info['classes'])}, "
          f"pool {info['pool']})" + (f": {info['reason']}" if info.get("reason") else ""))
    if info.get("archived"):
        print("  archived: it finished and left the live book; this is what the history keeps "
              "(its instances' accounting: legionrm history)")
    if info.get("qos") or info.get("hold") or info.get("on_preempt"):
        print(f"  qos {info.get('qos') or '(its class default)'}" + (f", held by {info['hold']}" if info.get("hold") else "")
              + (f", if preempted: {info['on_preempt']}" if info.get("on_preempt") else ""))
    for line in depend_lines(info):  # what it waits for; an array's tasks
        print(line)
    if info.get("start") is not None:
        print(f"  start {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(info['start']))} "
              f"({starts(info, time.time())})")
    if info.get("reserved_start") is not None:
        print(f"  reserved start {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(info['reserved_start']))} "
              f"(the queue keeps its cpus; in {_age(time.time(), info['reserved_start'])})")
    for e in info.get("history", ()):
        print(f"  +{e['at'] - info['submitted']:8.2f}s  {e['state']:<10} {e.get('reason', '')}")
    for i in info.get("instances", ()):
        print(f"  instance {i['id']} on {i['host']}: {i['state']}" + (f" ({i['reason']})" if i.get("reason") else ""))
    failures = info.get("failures") or ()
    if failures:
        print(f"  vetoes and refusals met ({len(failures)}):")
        for f in failures[:20]:
            print(f"    {f['key']} on {f.get('resource') or '-'} ({f.get('stage', '')}): {f['code']}: {f['reason']}")
    return 0


def cli_wait(args: argparse.Namespace) -> int:
    """``legionrm wait ID [--timeout S]``: until it ends; print its final state and exit with its
    work's exit code (128+signal when a signal ended it; 1 for an end without one but completed)."""
    info = client(args).wait(args.id, timeout=args.timeout)
    print(json.dumps(request_json(info)) if args.json else ended_line(info))
    return exit_status(info)


def cli_logs(args: argparse.Namespace) -> int:
    """``legionrm logs ID [--follow] [--stderr] [--instance N]``: stdout to stdout and stderr to
    stderr (``--stderr``: only stderr, to stdout); ``--follow`` prints what comes until the request
    ended (Ctrl-C stops)."""
    c = client(args)
    instance = int(args.instance) if args.instance is not None and args.instance.isdigit() else args.instance
    streams = ("stderr",) if args.stderr else ("stdout", "stderr")
    shown = {s: 0 for s in streams}
    try:
        while True:
            out = c.logs(args.id, instance)
            if args.json:
                print(json.dumps(out))
                return 0
            for s in streams:
                text = str(out.get(s, ""))
                if len(text) < shown[s]:  # trimmed under its cap meanwhile: its new tail in full
                    shown[s] = 0
                (sys.stdout if s == "stdout" or args.stderr else sys.stderr).write(text[shown[s]:])
                shown[s] = len(text)
            sys.stdout.flush()
            if not args.follow or c.show(args.id)["state"] in ENDED:
                return 0
            time.sleep(1.0)
    except KeyboardInterrupt:
        return 130


HISTORY_FIELDS = ("instance_id", "request_id", "user", "group", "pool", "class_name", "scheduler", "host", "cpus",
                  "memory_gb", "start", "end", "state", "exit_code", "cpu_s", "max_rss_kb")
"""``history --csv``'s columns, in order (every field of an accounting record)."""


def cli_history(args: argparse.Namespace) -> int:
    """``legionrm history [--user U] [--since T] [--until T] [--state S] [--json|--csv]``: one
    record per finished instance, as ``sacct`` lists them (a user's own; an administrator's: all)."""
    records = client(args).history(args.user, args.since, args.until, args.state)
    if args.json:
        print(json.dumps({"records": records}, indent=2))
    elif args.csv:
        import csv  # here: only history --csv writes CSV

        w = csv.writer(sys.stdout)
        w.writerow(HISTORY_FIELDS)
        for r in records:
            w.writerow(["" if (v := r.get(f)) is None else v for f in HISTORY_FIELDS])
    elif not records:
        print("no finished instances" + (f" in state {args.state}" if args.state else ""))
    else:
        print(columns(("instance", "request", "user", "class", "host", "cpus", "start", "elapsed", "state", "exit",
                       "cpu s", "max rss MB"),
                      [(r["instance_id"], r["request_id"], r["user"], r["class_name"], r["host"], f"{r['cpus']:g}",
                        time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["start"])),
                        f"{r['end'] - r['start']:.1f}s", r["state"], "-" if r.get("exit_code") is None else
                        r["exit_code"], f"{r['cpu_s']:.2f}", f"{r['max_rss_kb'] / 1024:.1f}") for r in records],
                      right=("cpus", "elapsed", "exit", "cpu s", "max rss MB")))
    return 0


def cli_cancel(args: argparse.Namespace) -> int:
    """``legionrm cancel ID... | --user U | --state S``: exit 1 when any was refused."""
    if not args.ids and not (args.user or args.state):
        raise ConfigError("give request ids, or --user / --state to cancel every match", file="cancel")
    result = client(args).cancel_many(args.ids, user=args.user, state=args.state)
    cancelled, refused = result.get("cancelled", ()), result.get("refused", {})
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for info in cancelled:
            print(f"{info['id']}: {info['state']}" + (f" ({info['reason']})" if info.get("reason") else ""))
        for rid, err in refused.items():
            print(f"{rid}: refused: {err['code']}: {err['reason']}")
        if not cancelled and not refused:
            print("nothing to cancel")
    return 1 if refused else 0


# --- the queue: hold / release / update / top, share / prio ---------------------------------------


def typed(args: argparse.Namespace) -> Any:
    """The typed Python :class:`~legionrm.client.client.Client` (pydantic results), for the verbs
    whose answers are printed from their models; the everyday verbs use the lean :func:`client`."""
    from legionrm.client.client import Client

    return Client.from_credentials(getattr(args, "credentials", None), as_user=getattr(args, "as_user", None))


def cli_queue(args: argparse.Namespace) -> int:
    """``legionrm hold|release|top ID...`` and ``legionrm update ID... --priority N|--qos Q``: one
    line per request, its state and reason; exit 1 when any was refused."""
    from legionrm.client.errors import GatewayError

    c = typed(args)
    refused = 0
    for rid in args.ids:
        try:
            if args.command == "update":
                if args.priority is None and args.qos is None:
                    raise ConfigError("give --priority N (or none: back to the formula) and/or --qos NAME", file="update")
                prio = None if args.priority in (None, "none") else int(args.priority)
                info = c.update(rid, priority=prio, qos=args.qos, clear_priority=args.priority == "none")
            else:
                info = getattr(c, args.command)(rid)
        except GatewayError as exc:
            refused += 1
            print(json.dumps({"id": rid, "code": exc.code, "reason": exc.reason}) if args.json
                  else f"{rid}: refused: {exc.code}: {exc.reason}")
            continue
        print(json.dumps(request_json(info.model_dump(mode="json"))) if args.json else f"{info.id}: {info.state}"
              + (f" (held by {info.hold})" if info.hold else "") + (f": {info.reason}" if info.reason else ""))
    return 1 if refused else 0


def share_lines(rows: Iterable[Any]) -> str:
    """The fair-share tree as ``sshare`` prints it: a group, then its users indented."""
    return columns(("group/user", "shares", "norm shares", "raw usage", "decayed usage", "norm usage", "factor"),
                   [(r.group if r.user is None else f"  {r.user}", f"{r.shares:g}", f"{r.norm_shares:.4f}",
                     f"{r.raw_usage:.0f}", f"{r.decayed_usage:.0f}", f"{r.norm_usage:.4f}", f"{r.factor:.4f}")
                    for r in rows],
                   right=("shares", "norm shares", "raw usage", "decayed usage", "norm usage", "factor"))


def cli_share(args: argparse.Namespace) -> int:
    """``legionrm share``: shares, raw and decayed usage (cpu-seconds) and the fair-share factor."""
    report = typed(args).share()
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        print(f"usage in cpu-seconds; half-life {report.half_life_s / 86_400:g} days"
              if report.half_life_s > 0 else "usage in cpu-seconds; no decay")
        print(share_lines(report.rows) if report.rows else "no users yet")
    return 0


def prio_lines(report: Any) -> str:
    """Each pending request's priority and its weighted factors, as ``sprio`` prints them."""
    w = report.weights
    return columns(("id", "user", "qos", "priority", "age", "fairshare", "qos_f", "size", "note"),
                   [(r.id, r.user, r.qos, f"{r.priority:.0f}" + ("*" if r.fixed else ""), f"{w.get('age', 0) * r.age:.0f}",
                     f"{w.get('fairshare', 0) * r.fairshare:.0f}", f"{w.get('qos', 0) * r.qos_factor:.0f}",
                     f"{w.get('size', 0) * r.size:.0f}", r.blocked or "-") for r in report.rows],
                   right=("priority", "age", "fairshare", "qos_f", "size"))


def cli_prio(args: argparse.Namespace) -> int:
    """``legionrm prio``: the pending requests in queue order, each priority and its weighted factors
    (``*``: an administrator's fixed priority), then the held ones."""
    report = typed(args).prio()
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        print(prio_lines(report) if report.rows else "no pending requests")
    return 0


# --- explain / hosts / pools / status ----------------------------------------------------------


def cli_explain(args: argparse.Namespace) -> int:
    """``legionrm explain FILE [--host H]...``: the plan without enacting it; exit 1 when none."""
    text = request_text(args.request)
    plan = client(args).explain(text, hosts=args.host or ())
    suite = plan["suite"]
    masters = suite.get("masters", ())
    if args.json:
        print(json.dumps(plan, indent=2))
        return 0 if masters else 1
    print(f"{len(masters)} master schedule(s)")
    for m, master in enumerate(masters, 1):
        print(f"  master {m}: " + ", ".join(f"{p['key']}@{p['host']}" for p in master["placements"]))
        for d in master.get("deltas", ()):
            print("    delta: " + ", ".join(f"{p['key']}@{p['host']}" for p in d["placements"]))
    for f in suite.get("failures", ()):
        print(f"  {f['key']} on {f.get('resource') or '-'}: {f['code']}: {f['reason']}")
    for f in suite.get("refused", ()):
        print(f"  refused {f['key']:<14} {f.get('resource') or '':<14} {f['code']}: {f['reason']}")
    for host, why in plan.get("hosts", {}).items():
        print(f"  why {host}: {why}")
    return 0 if masters else 1


def _num(v: float | None, fmt: str = "g") -> str:
    return "-" if v is None else format(v, fmt)


def host_lines(hosts: list[Doc]) -> str:
    """``legionrm hosts``' table of ``HostRow`` documents (``custom``: each custom kind free/total;
    ``drained``: why an administrator drained it)."""
    return columns(("name", "state", "cpus free/total", "memory GB", "gpus free/total", "custom", "load",
                    "owner policy", "pool", "drained"),
                   [(h["name"], h["state"], f"{_num(h.get('cpus_free'))}/{_num(h.get('cpus_total'))}",
                     _num(h.get("memory_gb")), f"{_num(h.get('gpus_free'))}/{_num(h.get('gpus_total'))}",
                     " ".join(f"{k} {_num(f)}/{_num(t)}" for k, (f, t) in (h.get("custom") or {}).items()) or "-",
                     _num(h.get("load"), ".2f"), h.get("owner_policy") or "-",
                     h.get("pool") or "-", h.get("drained") or "-") for h in hosts],
                   right=("cpus free/total", "memory GB", "gpus free/total", "load"))


def cli_hosts(args: argparse.Namespace) -> int:
    hosts = client(args).hosts()["hosts"]
    print(json.dumps({"hosts": hosts}, indent=2) if args.json else host_lines(hosts) if hosts else "no hosts you may use")
    return 0


def pool_json(pools: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The pools' vectors with units in every field name: cpu in cores,
    memory and disk in MB (Peloton's units, as configured), gpu in devices."""
    units = {"cpu": "cpu_cores", "memory": "memory_mb", "disk": "disk_mb", "gpu": "gpus"}
    return {path: {k: ({units.get(kk, kk): vv for kk, vv in v.items()} if isinstance(v, dict) else v)
                   for k, v in p.items()} for path, p in pools.items()}


def pool_lines(pools: dict[str, dict[str, Any]]) -> str:
    """The pools' table; ``custom``: each custom kind the pool names or holds, allocated/limit (``-``: no limit)."""
    rows = []
    for path, p in sorted(pools.items()):
        alloc, ent = p.get("allocation", {}) or {}, p.get("entitlement", {}) or {}
        custom = " ".join(f"{k} {c['allocation']:g}/{_num(c.get('limit'))}" for k, c in (p.get("custom") or {}).items())
        rows.append((path, f"{alloc.get('cpu', 0):g} / {ent.get('cpu', 0):.4g}",
                     f"{alloc.get('memory', 0) / 1024:g} / {ent.get('memory', 0) / 1024:.4g}",
                     f"{alloc.get('gpu', 0):g} / {ent.get('gpu', 0):.4g}", custom or "-"))
    return "pools (allocated / entitled)\n" + columns(("pool", "cpus", "memory GB", "gpus", "custom"), rows,
                                                      right=("cpus", "memory GB", "gpus"))


def cli_pools(args: argparse.Namespace) -> int:
    pools = client(args).pools()["pools"]
    print(json.dumps({"pools": pools}, indent=2) if args.json else pool_lines(pools) if pools else "no pools")
    return 0


def answering_line(a: Doc) -> str:
    """``status``'s line for an administrator: whether every resource answers, and why not
    (:meth:`legionrm.collection.answering.Answering.line`; imported here, only when shown)."""
    from legionrm.collection.answering import Answering
    from legionrm.models import RefusedWrite
    return Answering(total=a["total"], silent=tuple(a["not_answering"]),
                     refusals=tuple(RefusedWrite(**r) for r in a["refusals"])).line()


# --- show --follow -------------------------------------------------------------------------------


STATUS_WIDTH = 11
"""The status column's width: the longest status a trigger may fire (``deactivated``; a test holds
it equal to the longest of :data:`legionrm.events.triggers.STATUSES`)."""
ENDING = frozenset({"ended", "failed", "cancelled"})
"""The request-level statuses after which there is nothing more to follow."""


def event_line(e: Doc) -> str:
    """One status change (a ``StatusEvent`` document) as ``show --follow`` prints it."""
    when = time.strftime("%H:%M:%S", time.localtime(e["at"]))
    what = f"{e['request_id']}" + (f" {e['object_id']}" if e.get("object_id") else "")
    return f"{when}  {e['status']:<{STATUS_WIDTH}} {what}" + (f": {e['reason']}" if e.get("reason") else "")


def follow_events(fetch: Callable[[int], list[Doc]], timeout_s: float | None, *, as_json: bool = False,
                  ended: Callable[[], bool] = lambda: False, out: Any = None, poll_s: float = 0.5,
                  sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> int:
    """Print each event ``fetch(cursor)`` gives (``StatusEvent`` documents, every one after
    ``cursor``) as one line, until the request's own event says it ended (0), or a poll
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
                cursor = max(cursor, e["seq"])
                print(json.dumps(e) if as_json else event_line(e), file=out, flush=True)
                if e.get("object_id") is None and e["status"] in ENDING:
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
