"""What the cluster offers the caller: ``explain`` (the plan, not enacted), ``hosts``,
``pools``, and the line ``status`` shows an administrator on whether every resource answers."""

from __future__ import annotations

import argparse
import json

from legionrm.cli.front.connect import client
from legionrm.cli.front.lines import columns, num
from legionrm.cli.submitflags import request_text
from legionrm.client.wire import Doc

TYPE_CHECKING = False  # typing's, without importing typing: a CLI call never loads it
if TYPE_CHECKING:
    from typing import Any


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


def host_lines(hosts: list[Doc]) -> str:
    """``legionrm hosts``' table of ``HostRow`` documents (``custom``: each custom kind free/total;
    ``drained``: why an administrator drained it)."""
    return columns(("name", "state", "cpus free/total", "memory GB", "gpus free/total", "custom", "load",
                    "owner policy", "pool", "drained"),
                   [(h["name"], h["state"], f"{num(h.get('cpus_free'))}/{num(h.get('cpus_total'))}",
                     num(h.get("memory_gb")), f"{num(h.get('gpus_free'))}/{num(h.get('gpus_total'))}",
                     " ".join(f"{k} {num(f)}/{num(t)}" for k, (f, t) in (h.get("custom") or {}).items()) or "-",
                     num(h.get("load"), ".2f"), h.get("owner_policy") or "-",
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
        custom = " ".join(f"{k} {c['allocation']:g}/{num(c.get('limit'))}" for k, c in (p.get("custom") or {}).items())
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
