"""The fair-share core's checkpoint: its state in SQLite (stdlib sqlite3, WAL):
machines, jobs, shares, needy list.

:meth:`RmCheckpoint.save` writes a whole snapshot in one transaction (so a crash
leaves the previous snapshot intact); :meth:`RmCheckpoint.load_into` rebuilds a
fresh :class:`DuccCore` (made from the *current* configuration) from it,
like DUCC's recovery from the Orchestrator's map:

* every share goes back on its machine, so its space is occupied and can
  never be handed out twice;
* a share whose job's class no longer exists, or that sits on a machine its
  class may not use, is *blacklisted*: its space stays occupied, the machine
  takes no new work, and it is evicted; ``confirm_exit`` whitelists it.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from legionrm.scheduler.fairshare.core import DuccCore, Numbering
from legionrm.scheduler.fairshare.shares import Job, Share

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS machines (
    name TEXT PRIMARY KEY, memory_gb REAL NOT NULL, nodepool TEXT NOT NULL, share_order INTEGER NOT NULL,
    varied_off INTEGER NOT NULL, dead INTEGER NOT NULL, missed INTEGER NOT NULL, blacklist TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, user TEXT NOT NULL, cls TEXT NOT NULL, memory_gb REAL NOT NULL, share_order INTEGER NOT NULL,
    work_items INTEGER NOT NULL, threads INTEGER NOT NULL, max_processes INTEGER, time_per_item_ms REAL NOT NULL,
    init_time_ms REAL NOT NULL, kind TEXT NOT NULL, submit REAL NOT NULL, seq INTEGER NOT NULL,
    refused INTEGER NOT NULL, completed INTEGER NOT NULL, reason TEXT NOT NULL, order_upgraded INTEGER NOT NULL,
    counted INTEGER NOT NULL, cap INTEGER NOT NULL, pure_fair_share INTEGER NOT NULL, deferred INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS shares (
    id INTEGER PRIMARY KEY, job TEXT NOT NULL, machine TEXT NOT NULL, share_order INTEGER NOT NULL,
    pending INTEGER NOT NULL, evicted INTEGER NOT NULL, fixed INTEGER NOT NULL, initialized INTEGER NOT NULL,
    init_time_ms REAL NOT NULL, investment_ms REAL NOT NULL);
CREATE TABLE IF NOT EXISTS needy (pos INTEGER PRIMARY KEY, job TEXT NOT NULL);
"""


class RmCheckpoint:
    """One SQLite file holding the latest RM snapshot (the checkpoint)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self.db = sqlite3.connect(self.path)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    def save(self, core: DuccCore) -> None:
        """Replace the stored snapshot with ``core``'s state (atomic)."""
        with self.db:
            for t in ("meta", "machines", "jobs", "shares", "needy"):
                self.db.execute(f"DELETE FROM {t}")
            numbering = core.numbering()
            self.db.executemany(
                "INSERT INTO meta VALUES (?, ?)",
                [("cycle", str(core.cycle)), ("next_share", str(numbering.next_share)), ("seq", str(numbering.seq)),
                 ("maxorder", json.dumps(numbering.maxorder))],
            )
            self.db.executemany(
                "INSERT INTO machines VALUES (?,?,?,?,?,?,?,?)",
                [(m.name, m.memory_gb, m.nodepool, m.order, int(m.varied_off), int(m.dead), m.missed,
                  json.dumps({str(k): v for k, v in m.blacklist.items()})) for m in core.machines.values()],
            )
            self.db.executemany(
                "INSERT INTO jobs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [(j.id, j.user, j.cls, j.memory_gb, j.order, j.work_items, j.threads, j.max_processes,
                  j.time_per_item_ms, j.init_time_ms, j.kind, j.submit, j.seq, int(j.refused), int(j.completed),
                  j.reason, int(j.order_upgraded), j.counted, j.cap, j.pure_fair_share, int(j.deferred))
                 for j in core.jobs.values()],
            )
            self.db.executemany(
                "INSERT INTO shares VALUES (?,?,?,?,?,?,?,?,?,?)",
                [(s.id, s.job, s.machine, s.order, int(s.pending), int(s.evicted), int(s.fixed), int(s.initialized),
                  s.init_time_ms, s.investment_ms) for m in core.machines.values() for s in m.shares.values()],
            )
            self.db.executemany("INSERT INTO needy VALUES (?, ?)", list(enumerate(core.needy)))

    def load_into(self, core: DuccCore) -> DuccCore:
        """Recover the stored state into a freshly configured core (no jobs yet);
        returns it.  Machines the core already has keep the pool and size the
        current configuration gave them (so work a reconfiguration strands on a
        node is blacklisted); the others come back as stored.  Idempotent for
        one fresh core only."""
        meta = dict(self.db.execute("SELECT key, value FROM meta"))
        if not meta:
            return core
        core.cycle = int(meta["cycle"])
        for row in self.db.execute("SELECT * FROM machines ORDER BY name"):
            name, mem, pool, order, off, dead, missed, bl = row
            if name in core.machines:
                m = core.machines[name]  # configured now: its pool and size win
            else:
                pool = pool if pool in core.tree.pools else None  # a vanished pool: the default pool
                m = core.add_machine(name, mem, pool)
            m.varied_off, m.dead, m.missed = bool(off), bool(dead), missed
            m.blacklist = {int(k): v for k, v in json.loads(bl).items()}
        for row in self.db.execute("SELECT * FROM jobs ORDER BY seq"):
            (jid, user, cls, mem, order, wi, th, maxp, tpi, init, kind, submit, seq, refused, completed, reason,
             upgraded, counted, cap, pure, deferred) = row
            j = Job(id=jid, user=user, cls=cls, memory_gb=mem, order=order, work_items=wi, threads=th,
                    max_processes=maxp, time_per_item_ms=tpi, init_time_ms=init, kind=kind, submit=submit, seq=seq,
                    refused=bool(refused), completed=bool(completed), reason=reason, order_upgraded=bool(upgraded),
                    counted=counted, cap=cap, pure_fair_share=pure, deferred=bool(deferred))
            core.jobs[jid] = j
        for row in self.db.execute("SELECT * FROM shares ORDER BY id"):
            sid, jid, mname, order, pending, evicted, fixed, initialized, init_ms, inv = row
            host = core.machines.get(mname)
            if host is None:
                continue
            s = Share(id=sid, job=jid, machine=mname, order=order, pending=bool(pending), evicted=bool(evicted),
                      fixed=bool(fixed), initialized=bool(initialized), init_time_ms=init_ms, investment_ms=inv)
            job = core.jobs.get(jid)
            rc = core.classes.classes.get(job.cls) if job is not None else None
            if job is None or rc is None or not _compatible(core, rc, host.nodepool):
                host.blacklist[sid] = order  # space stays taken until the process is confirmed gone
                if job is not None:
                    job.refused = rc is None
                    if rc is None:
                        job.reason = f"Refused: class {job.cls} no longer exists"
                continue
            host.shares[sid] = s
            job.shares[sid] = s
        core.needy[:] = [jid for _, jid in self.db.execute("SELECT pos, job FROM needy ORDER BY pos") if jid in core.jobs]
        core.resume(Numbering(int(meta["next_share"]), int(meta["seq"]), json.loads(meta.get("maxorder", "{}"))))
        return core


def _compatible(core: DuccCore, rc, machine_pool: str) -> bool:
    """DUCC's compatibleNodepool: non-preemptable work must sit in its class's own
    pool; fair-share work anywhere in the same top-level tree."""
    home = core.tree.pools[rc.nodepool]
    mp = core.tree.pools[machine_pool]
    return home is mp or (rc.preemptable and home.top is mp.top)
