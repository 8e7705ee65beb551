"""An administrator's live changes: ``legionrm reload [FILE | --cluster FILE]`` (a cluster
file's pools, schedulers, site policy and owners' policies and access lists, all or nothing) and ``legionrm pools
create|update PATH KIND=RESERVATION:LIMIT[:SHARE]... [--default]`` / ``pools delete PATH``."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from legionrm.cli.front.connect import client
from legionrm.errors import ConfigError


def _print_changes(changes: list[str], as_json: bool) -> None:
    print(json.dumps({"changes": list(changes)}) if as_json else "\n".join(changes) or "nothing to change")


def cli_reload(args: argparse.Namespace) -> int:
    """``legionrm reload [FILE | --cluster FILE]``: what the file changes applied live, all or nothing
    (:mod:`legionrm.gateway.several.reload`)."""
    if args.file and args.cluster and Path(args.file) != Path(args.cluster):
        raise ConfigError(f"two cluster files given ({args.file} and --cluster {args.cluster}): give one",
                          file="command line")
    named = args.file or args.cluster
    path = Path(named) if named else running_cluster()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the cluster file: {exc.strerror}", file=str(path)) from None
    _print_changes(client(args).reload(text, str(path))["changes"], args.json)
    return 0


def running_cluster() -> Path:
    """The cluster file the running system runs (``up.json`` in the home: ``up``'s, or the last reload's)."""
    home = Path(os.environ.get("LEGIONRM_HOME", str(Path.home() / ".legionrm")))
    try:
        source = json.loads((home / "up.json").read_text()).get("cluster")
    except (OSError, ValueError, AttributeError):
        source = None
    if not source:
        raise ConfigError("the cluster file the system runs is not known here: give the cluster file",
                          file=str(home / "up.json"))
    return Path(source)


def pool_table(path: str, kinds: list[str], default: bool) -> dict[str, Any]:
    """A ``[[pool]]`` table from ``PATH KIND=RESERVATION:LIMIT[:SHARE]...`` (``cpu=0:4``)."""
    table: dict[str, Any] = {"path": path}
    for item in kinds:
        kind, _, nums = item.partition("=")
        try:
            values = [float(x) for x in nums.split(":")]
        except ValueError:
            values = []
        if not kind or not 2 <= len(values) <= 3:
            raise ConfigError(f"{item!r} is not KIND=RESERVATION:LIMIT[:SHARE] (cpu=0:4)", file="command line")
        table[kind] = dict(zip(("reservation", "limit", "share"), values))
    if default:
        table["default"] = True
    return table


def cli_pool_edit(args: argparse.Namespace) -> int:
    """``legionrm pools create|update PATH KIND=RESERVATION:LIMIT[:SHARE]... [--default]``, ``pools delete PATH``."""
    if not args.rest:
        raise ConfigError(f"pools {args.file} needs the pool's path, e.g. /research", file="command line")
    table = pool_table(args.rest[0], args.rest[1:], bool(getattr(args, "default", False)))
    _print_changes(client(args).edit_pool(args.file, table)["changes"], args.json)
    return 0
