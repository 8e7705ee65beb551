"""``legionrm audit [--json]``: the auditor over the running system.

Exit 0 when the books balance, 1 with one line per finding (or a JSON object
``{"findings": [...]}``)."""

from __future__ import annotations

import argparse
import json

from legionrm.models import AuditFinding
from legionrm.naming import require_actor, scheduler_name
from legionrm.system import call, init_connect, proof_for, scheduler_names


def cli_audit(args: argparse.Namespace) -> int:
    init_connect(getattr(args, "address", None) or "auto")
    findings: list[AuditFinding] = []
    for name in scheduler_names():  # each audits what it issued (and the hosts' capacity)
        scheduler = require_actor(scheduler_name(name))
        proof = proof_for(scheduler, "audit", {}, to=scheduler_name(name))
        findings += [f for f in call(scheduler.audit.remote(proof=proof), 60) if f not in findings]
    if args.json:
        print(json.dumps({"findings": [f.model_dump() for f in findings]}, indent=2))
    elif not findings:
        print("the books balance: every instance, reservation and allocation is accounted for")
    else:
        for f in findings:
            print(f"{f.code:<22} {f.subject}: {f.detail}")
    return 0 if not findings else 1
