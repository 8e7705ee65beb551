"""A user's program: ask legionrm for instances and see where they run.

    python examples/user_program.py            # starts a private local system
    legionrm up && python examples/user_program.py --connect && legionrm down

It builds a request with the pydantic models, calls ``scheduleObjects`` on the
Scheduler actor, and reads which instances run where and, for a request that
cannot be met, why each placement failed (resource, code, reason).
"""

from __future__ import annotations

import argparse

from legionrm.config import load_cluster
from legionrm.models import Identity, ObjectRequest, SchedulerResponse, SchedulingRequest
from legionrm.system import boot, connect, local_cluster


def show(response: SchedulerResponse) -> None:
    if response.ok:
        print(f"{response.request_id}: {len(response.instances)} running")
        for inst in response.instances:
            print(f"  {inst.instance_id} ({inst.class_name}) on {inst.host}, vault {inst.vault}")
        for attempt in response.enact.attempts:
            for f in attempt.failures:  # vetoes met on the way, overcome by a delta or another master
                print(f"  on the way: {f.resource} refused {f.key}: {f.code} ({f.reason})")
    else:
        print(f"{response.request_id}: not scheduled")
        for f in response.failures:
            print(f"  {f.key}: {f.resource or '-'} {f.code}: {f.reason}")


def run(system) -> None:
    me = Identity(user="alice", groups=("physics",))
    # two solvers wherever they fit, and a Worker on a fast x86 host
    show(system.schedule(SchedulingRequest(request_id="example-1", identity=me, objects=(
        ObjectRequest(class_name="Solver", count=2, cpus=4, memory_gb=8),
        ObjectRequest(class_name="Worker", cpus=8, memory_gb=16, constraint='$arch == "x86_64" and $speed_ghz >= 2.4'),
    ))))
    # more GPUs than any host has: every placement says why it failed
    show(system.schedule(SchedulingRequest(request_id="example-2", identity=me, objects=(
        ObjectRequest(class_name="Worker", gpus=8),
    ))))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--connect", action="store_true", help="use the system `legionrm up` started")
    if ap.parse_args().connect:
        run(connect())
        return
    with local_cluster(workers=()):
        system = boot(load_cluster())
        try:
            run(system)
        finally:
            system.shutdown()


if __name__ == "__main__":
    main()
