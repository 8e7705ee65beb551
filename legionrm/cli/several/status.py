"""``legionrm status``: the gateway, the hosts, every scheduler's queue (one table, as
``legionrm schedulers`` prints it), the pools and the state store, as the caller may see them."""

from __future__ import annotations

import argparse
import json

from legionrm.cli.front.cluster import answering_line, pool_json, pool_lines
from legionrm.cli.front.connect import client
from legionrm.cli.several.schedulers import scheduler_table


def cli_status(args: argparse.Namespace) -> int:
    """``legionrm status``: the gateway, the hosts, every scheduler's queue (as the caller may see it), the pools."""
    c = client(args)
    st, hosts = c.status(), c.hosts()["hosts"]
    if args.json:
        if st.get("scheduler"):
            st["scheduler"]["pools"] = pool_json(st["scheduler"].get("pools") or {})
        print(json.dumps({"gateway": c.credentials.url, **st, "hosts": hosts}, indent=2))
        return 0
    print(f"gateway {c.credentials.url} (legionrm {st['version']}), you are {st['user']}")
    for e in st.get("errors", ()):
        print(f"  ! {e}")
    up = sum(h["state"] != "off" for h in hosts)
    print(f"{len(hosts)} hosts you may use, {up} available")
    degraded = [h for h in hosts if h.get("degraded")]
    if degraded:  # they answer and beat, but grant nothing new until their state file takes writes again
        print(f"  ! {len(degraded)} degraded ({', '.join(h['name'] for h in degraded[:5])}): {degraded[0]['degraded']}")
    if st.get("answering") is not None:  # an administrator: every resource the system booted answers, or why not
        print(answering_line(st["answering"]))
    if st.get("schedulers"):  # every scheduler's queue, one table (as `legionrm schedulers`)
        print(scheduler_table(st["schedulers"]))
    s = st.get("scheduler")  # the default's: the pools and the store are the system's
    if s is not None:
        if s.get("pools"):
            print(pool_lines(s["pools"]))
        store = s.get("store")
        if store:
            print(f"store {store['path']}: {store['bytes'] / 1024:.0f} KB")
            if store.get("fault"):
                print(f"  ! {store['fault']}")
    return 0
