"""How long a CLI call through the gateway takes: ``legionrm list``, start to exit.

A gateway over an in-process system is served on 127.0.0.1 by this process;
``python -m legionrm.cli list --credentials FILE`` runs as a fresh process
each time (what a user's shell does), and the median wall time of the runs
is printed beside the target of 150 ms (the issue's), with the same for
``python -c pass`` (the interpreter's own start, the floor) and for the
import of the CLI alone.

    python benchmarks/bench_cli.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import check, info  # noqa: E402

from legionrm.auth.guard import auth_home, ensure_home  # noqa: E402
from legionrm.auth.registry import Registry  # noqa: E402
from legionrm.client.client import Client  # noqa: E402
from legionrm.client.credentials import Credentials  # noqa: E402
from legionrm.config import load_cluster  # noqa: E402
from legionrm.gateway.app import make_app  # noqa: E402
from legionrm.gateway.local import LocalPlane  # noqa: E402
from legionrm.gateway.serve import in_thread  # noqa: E402
from legionrm.inprocess import LocalSystem  # noqa: E402

TARGET_MS = 150.0


def timed(argv: list[str], runs: int, env: dict[str, str]) -> float:
    """The median wall time of ``runs`` runs of ``argv``, in ms (one warm-up run first)."""
    out = []
    for i in range(runs + 1):
        t = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
        if i:
            out.append((time.perf_counter() - t) * 1e3)
    return statistics.median(out)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=15)
    args = p.parse_args()
    home = Path(tempfile.mkdtemp(prefix="lrm-bench-cli-"))
    ensure_home(home, operator="admin")
    cred = Registry(auth_home(home)).add_user("ann")
    system = LocalSystem(load_cluster(None))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    with in_thread(make_app(LocalPlane(system, home), home)) as url:
        creds = Credentials.of(url, "ann", cred.private_key).write(home / "ann.credentials")
        # a few requests to list
        with Client.from_credentials(creds) as c:
            for _ in range(5):
                c.submit({"object": [{"class_name": "Worker", "count": 1, "cpus": 1}]})
        print(f"a CLI call through the gateway, median of {args.runs} runs ({os.cpu_count()} cores, "
              f"load average {os.getloadavg()[0]:.1f})")
        floor = timed([sys.executable, "-c", "pass"], args.runs, env)
        imports = timed([sys.executable, "-c", "import legionrm.cli, legionrm.cli.front"], args.runs, env)
        listed = timed([sys.executable, "-m", "legionrm.cli", "list", "--credentials", str(creds)], args.runs, env)
    info("python -c pass (the floor)", f"{floor:.0f} ms")
    info("import the CLI and its gateway verbs", f"{imports:.0f} ms")
    ok = check("legionrm list (5 requests) through the gateway", f"<= {TARGET_MS:.0f} ms", f"{listed:.0f} ms",
               listed <= TARGET_MS)
    print(f"  {'OK' if ok else 'SHORT'}: target {TARGET_MS:.0f} ms, measured {listed:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
