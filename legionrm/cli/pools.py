"""``legionrm pools FILE [--json]``: validate resource pools, compute
entitlement, admit once, print (no Ray).  FILE is a pool file (capacity,
pools, demand, gangs) or a cluster file, whose ``[[pool]]`` tables are
entitled to the cluster's own capacity (nothing queued, so nothing admitted)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.table import Table

from legionrm.cli.several.reload import cli_pool_edit
from legionrm.cli.output import show, table
from legionrm.config import load_cluster
from legionrm.errors import ConfigError
from legionrm.scheduler.pools import KINDS, capacity_vector, run_file, tree_for_cluster
from legionrm.tomlio import load_toml

UNITS = {"cpu": "cores", "memory": "MB", "disk": "MB", "gpu": "devices"}
_CLUSTER_KEYS = {"collection", "host", "vault", "class", "fairshare"}
_ROWS = (("entitlement", "entitlement"), ("non-slack", "non_slack_entitlement"),
         ("slack", "slack_entitlement"), ("allocation", "allocation"))


def _n(v: float) -> str:
    return f"{v:.3f}".rstrip("0").rstrip(".") if v != int(v) else str(int(v))


def is_cluster_file(path: str) -> bool:
    """A cluster file (hosts, vaults, classes...) rather than a pool file."""
    try:
        doc = load_toml(path)
    except ConfigError:
        return False  # the pool loader reports it, with its caret
    return bool(_CLUSTER_KEYS & set(doc))


def run_cluster(path: str) -> dict[str, Any]:
    """The cluster's pools entitled to its capacity (hosts' cpus, memory, gpus; vaults' storage)."""
    spec = load_cluster(path)
    tree = tree_for_cluster(spec)
    if tree is None:
        raise ConfigError("the cluster file has no [[pool]] tables (every request is admitted)", file=path)
    tree.compute_entitlement(capacity_vector(spec.capacity()))
    return {"pools": tree.report(), "admitted": []}


def render(result: dict[str, Any]) -> Table:
    """The human table: four rows per pool, a column per kind with its unit."""
    t = table(None, ("pool", "", *(f"{k} {UNITS[k]}" for k in KINDS), "queued"),
              right=[f"{k} {UNITS[k]}" for k in KINDS])
    for path, p in result["pools"].items():
        queued = "; ".join(f"{q}: {', '.join(ids)}" for q, ids in p["queues"].items() if ids)
        for i, (label, key) in enumerate(_ROWS):
            t.add_row(path if i == 0 else "", label, *(_n(p[key][k]) for k in KINDS), queued if i == 0 else "")
    return t


EDITS = ("create", "update", "delete")
"""``legionrm pools create|update|delete ...``: one pool of the running system, through the gateway."""


def cli_main(args: argparse.Namespace) -> int:
    """Entry point for ``legionrm pools``; LegionErrors propagate to cli (exit 2)."""
    if args.file in EDITS:
        return cli_pool_edit(args)
    result = run_cluster(args.file) if is_cluster_file(args.file) else run_file(args.file)
    if args.json:
        print(json.dumps({"units": UNITS, **result}, indent=2))
    else:
        show(render(result), "admitted: " + (", ".join(result["admitted"]) or "(none)"))
    return 0
