"""The commands that still talk to the control plane over Ray, as the service account
on the head: moving a request's objects: ``deactivate``, ``activate``, ``migrate``.
The user verbs (``list``, ``show``, ``cancel``, ``explain``...) go through the
gateway (:mod:`legionrm.cli.front`).

Each answers in one line, or JSON under ``--json``; every call has a timeout."""

from __future__ import annotations

import argparse
from typing import Any

from legionrm.models import (
    ObjectStatus,
    Refusal,
    RequestInfo,
)
from legionrm.naming import SCHEDULER, require_actor, scheduler_name
from legionrm.scheduler.several import Roster
from legionrm.system import STATE_FILE, call, init_connect, proof_for

CALL_TIMEOUT_S = 30.0


def scheduler_for(args: argparse.Namespace) -> Any:
    init_connect(getattr(args, "address", None) or "auto")
    return require_actor(scheduler_name(Roster.from_state(STATE_FILE).default))  # the default (it hears "scheduler")


def request_info(scheduler: Any, request_id: str) -> RequestInfo:
    """``request_info`` on the Scheduler, signed as this driver's user."""
    proof = proof_for(scheduler, "request_info", {"request_id": request_id}, to=SCHEDULER)
    return call(scheduler.request_info.remote(request_id, proof=proof), CALL_TIMEOUT_S)


MOVES = {"deactivate": (), "activate": ("constraint",), "migrate": ("constraint",)}


def cli_move(args: argparse.Namespace) -> int:
    """``legionrm deactivate ID`` / ``activate ID [--on MIL]`` / ``migrate ID [--to MIL]``:
    one line (or JSON) saying where the object is now; exit 1 when refused."""
    sched = scheduler_for(args)
    kw: dict[str, Any] = {"object_id": args.id}
    if MOVES[args.command]:
        kw["constraint"] = args.where
    else:
        kw["reason"] = "deactivated by its user"
    proof = proof_for(sched, args.command, kw, to=SCHEDULER)
    got: ObjectStatus | Refusal = call(getattr(sched, args.command).remote(**kw, proof=proof), 120.0)
    if args.json:
        print(got.model_dump_json())
    elif isinstance(got, Refusal):
        print(f"{args.id}: refused by {got.by}: {got.code}: {got.reason}")
    else:
        print(f"{got.object_id}: {got.state}, {got.message}")
    return 1 if isinstance(got, Refusal) else 0
