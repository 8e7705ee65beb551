"""``legionrm submit``: a request file (or stdin) with ``--set`` overrides, through the gateway;
with ``--wait`` until it ends."""

from __future__ import annotations

import argparse
import json

from legionrm.cli.front.connect import client
from legionrm.cli.front.lines import ended_line, exit_status
from legionrm.cli.submitflags import request_text, submit_overrides
from legionrm.errors import ConfigError


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
