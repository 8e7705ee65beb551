"""One way for every benchmark to print a target: label, previous figure,
target, measured, OK or SHORT; and a one-screen summary of all of them.

Each benchmark calls :func:`check` (a target) or :func:`info` (a figure with
no target).  When ``LEGIONRM_BENCH_SUMMARY`` names a file, every line is also
appended to it (tab-separated), and ``python benchmarks/_report.py FILE``
prints the summary (``make bench`` does so at the end) and exits with the
number of SHORT rows (capped at 100), so a short target fails ``make bench``.

The "before" figures are what the benchmark printed before the perf work
(measured on the 2-core development machine); they are for comparison only.
"""

from __future__ import annotations

import os
import sys

_ENV = "LEGIONRM_BENCH_SUMMARY"
_BENCH = os.path.splitext(os.path.basename(sys.argv[0]))[0] if sys.argv and sys.argv[0] else "bench"


def _append(kind: str, label: str, before: str, target: str, measured: str, verdict: str, note: str) -> None:
    path = os.environ.get(_ENV)
    if not path:
        return
    clean = lambda s: str(s).replace("\t", " ").replace("\n", " ")  # noqa: E731
    with open(path, "a", encoding="utf-8") as f:
        f.write("\t".join(clean(x) for x in (_BENCH, kind, label, before, target, measured, verdict, note)) + "\n")


def check(label: str, target: str, measured: str, ok: bool, *, before: str = "-", note: str = "") -> bool:
    """Print one target line and record it; returns ``ok``.  A short target's
    note also gives the machine's load then (this machine is shared: a figure
    measured under load says so)."""
    verdict = "OK" if ok else "SHORT"
    if not ok and hasattr(os, "getloadavg"):
        note = "; ".join(x for x in (note, f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores") if x)
    print(f"  {label:<52} before {before:<12} target {target:<12} measured {measured:<14} {verdict}"
          + (f"  ({note})" if note else ""))
    _append("target", label, before, target, measured, verdict, note)
    return ok


def info(label: str, measured: str, *, before: str = "-", note: str = "") -> None:
    """Print one figure that has no target (a yardstick, a memory figure)."""
    print(f"  {label:<52} before {before:<12} {'':<19} measured {measured:<14}" + (f"  ({note})" if note else ""))
    _append("info", label, before, "-", measured, "", note)


def summary(path: str) -> int:
    """Print the one-screen summary of a run; the count of SHORT targets is returned."""
    try:
        with open(path, encoding="utf-8") as f:
            rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    except FileNotFoundError:
        print("no benchmark results recorded")
        return 0
    print()
    print("=" * 118)
    print(f"{'benchmark':<16} {'target':<50} {'before':>12} {'target':>12} {'measured':>14} verdict")
    print("-" * 118)
    missed = 0
    for bench, kind, label, before, target, measured, verdict, note in rows:
        if kind != "target":
            continue
        missed += verdict != "OK"
        print(f"{bench[:16]:<16} {label[:50]:<50} {before[:12]:>12} {target[:12]:>12} {measured[:14]:>14} {verdict}")
    print("-" * 118)
    total = sum(1 for r in rows if r[1] == "target")
    print(f"{total - missed} of {total} targets met, {missed} SHORT"
          + ("" if not missed else " (each benchmark's output says why)"))
    print("=" * 118)
    return missed


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python benchmarks/_report.py SUMMARY_FILE")
    raise SystemExit(min(summary(sys.argv[1]), 100))
