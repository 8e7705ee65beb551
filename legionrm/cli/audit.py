"""``legionrm audit [--json]``: the auditor over the running system.

Exit 0 when the books balance, 1 with one line per finding (or a JSON object
``{"findings": [...]}``)."""

from __future__ import annotations

import argparse
import json

from legionrm.models import AuditFinding
from legionrm.naming import SCHEDULER, require_actor
from legionrm.system import call, init_connect, proof_for


def cli_audit(args: argparse.Namespace) -> int:
    init_connect(getattr(args, "address", None) or "auto")
    scheduler = require_actor(SCHEDULER)
    findings: list[AuditFinding] = call(scheduler.audit.remote(proof=proof_for(scheduler, "audit", {}, to=SCHEDULER)), 60)
    if args.json:
        print(json.dumps({"findings": [f.model_dump() for f in findings]}, indent=2))
    elif not findings:
        print("the books balance: every instance, reservation and allocation is accounted for")
    else:
        for f in findings:
            print(f"{f.code:<22} {f.subject}: {f.detail}")
    return 0 if not findings else 1
