"""The verbs over one's requests: ``list`` (``--watch``, a page at a time), ``show`` (with
``--follow``), ``wait``, ``logs``, ``history`` (``--csv``) and ``cancel``."""

from __future__ import annotations

import argparse
import json
import sys
import time

from legionrm.cli.front.connect import client
from legionrm.cli.front.follow import follow_events
from legionrm.cli.front.lines import age, columns, ended_line, exit_status, request_json, request_rows, starts
from legionrm.cli.submitflags import depend_lines
from legionrm.client.errors import GatewayError
from legionrm.client.wire import ENDED
from legionrm.errors import ConfigError

TYPE_CHECKING = False  # typing's, without importing typing: a CLI call never loads it
if TYPE_CHECKING:
    from typing import TextIO


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
              f"(the queue keeps its cpus; in {age(time.time(), info['reserved_start'])})")
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
    ended (Ctrl-C stops).  A request whose several instances ran work, with no ``--instance``: each
    run's output in turn under a ``==> ID instance N: INSTANCE <==`` line (``--follow`` needs one)."""
    c = client(args)
    instance = int(args.instance) if args.instance is not None and args.instance.isdigit() else args.instance
    streams = ("stderr",) if args.stderr else ("stdout", "stderr")
    if instance is None and not args.follow and not args.json:
        runs = [i["id"] for i in c.show(args.id).get("instances", ()) if not i.get("requeued")]
        if len(runs) > 1:  # several instances (a pipeline's stages, a count): each under its name, as tail does
            for k, iid in enumerate(runs):
                print(f"{'' if k == 0 else chr(10)}==> {args.id} instance {k}: {iid} <==", flush=True)
                try:
                    out = c.logs(args.id, iid)
                except GatewayError as exc:  # this one has none to show (it runs no command): said, and on
                    print(f"({exc.code}: {exc.reason})", flush=True)
                    continue
                for s in streams:
                    _to(s, args).write(str(out.get(s, "")))
                sys.stdout.flush()
            return 0
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
                _to(s, args).write(text[shown[s]:])
                shown[s] = len(text)
            sys.stdout.flush()
            if not args.follow or c.show(args.id)["state"] in ENDED:
                return 0
            time.sleep(1.0)
    except KeyboardInterrupt:
        return 130


def _to(stream: str, args: argparse.Namespace) -> TextIO:
    """Where ``logs`` writes a run's ``stream``: stdout to stdout, stderr to stderr (``--stderr``: to stdout)."""
    return sys.stdout if stream == "stdout" or args.stderr else sys.stderr


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
