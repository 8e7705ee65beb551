"""``legionrm audit [--repair] [--json]``: the auditor over the running system.

Exit 0 when the books balance, 1 with one line per finding, by code (or a
JSON object ``{"findings": [...]}``).  With ``--repair`` each finding is
fixed where it can be, and its line says what was done; the exit is then 0
only when every finding was repaired."""

from __future__ import annotations

import argparse
import json

from legionrm.models import AuditFinding
from legionrm.naming import require_actor, scheduler_name
from legionrm.scheduler.several import Roster
from legionrm.system import STATE_FILE, call, init_connect, proof_for


def cli_audit(args: argparse.Namespace) -> int:
    init_connect(getattr(args, "address", None) or "auto")
    repair = bool(getattr(args, "repair", False))
    findings: list[AuditFinding] = []
    for name in Roster.from_state(STATE_FILE).names:  # each audits (and repairs) what it issued, and the hosts' capacity
        scheduler = require_actor(scheduler_name(name))
        proof = proof_for(scheduler, "audit", {"repair": True} if repair else {}, to=scheduler_name(name))
        findings += [f for f in call(scheduler.audit.remote(repair, proof=proof), 60) if f not in findings]
    if args.json:
        print(json.dumps({"findings": [f.model_dump() for f in findings]}, indent=2))
    elif not findings:
        print("the books balance: every request, instance, reservation and allocation is accounted for")
    else:
        for f in findings:
            print(f"{f.code:<22} {f.subject}: {f.detail}")
            if repair:
                print(f"{'':<22}   repaired: {f.repaired}" if f.repaired else f"{'':<22}   not repaired: look at it")
    if repair:
        return 0 if all(f.repaired for f in findings) else 1
    return 0 if not findings else 1
