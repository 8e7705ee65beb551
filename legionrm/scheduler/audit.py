"""The auditor: do the accounts agree with what runs?

:func:`audit` compares a Scheduler's requests with the hosts, vaults, class
objects, pools and allotments it books against, and returns every
disagreement as a :class:`Finding` (empty: the books balance).  It reads;
it changes nothing.  Checked:

* ``host.over_capacity``: no host's calendar holds more than its capacity now;
* ``instance.orphan``: every instance a host runs belongs to a running
  request (nothing runs that nobody asked for, nothing leaks after an end);
* ``instance.ghost``: every instance the Scheduler counts as running runs on
  its host;
* ``class.count``: each class object counts exactly the Scheduler's running
  instances of that class;
* ``reservation.unheld``: a reservation still open on a resource belongs to
  a running instance, or expires within the token timeout;
* ``pool.allocation``: the pools hold allocations exactly for the requests
  admitted and not finished; ``allotment.held`` likewise for DUCC allotments;
  with nothing admitted, every pool's allocation is zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from legionrm.scheduler.scheduler import Scheduler

EPS = 1e-6


@dataclass(frozen=True)
class Finding:
    """One disagreement: a code, what it is about, and what was seen."""

    code: str
    subject: str
    detail: str

    def __str__(self) -> str:
        return f"{self.code} {self.subject}: {self.detail}"


def audit(scheduler: Scheduler, hosts: Iterable[Any], classes: Iterable[Any] = (), vaults: Iterable[Any] = (),
          *, grace_s: float | None = None) -> list[Finding]:
    """Every disagreement between ``scheduler``'s books and the resources
    (host objects, class objects, vault objects, all in this process).
    ``grace_s`` (default: the scheduler's token timeout) is how long an
    unheld reservation may still be open (it expires on its own)."""
    grace = scheduler.token_timeout_s if grace_s is None else grace_s
    out: list[Finding] = []
    running = {r.instance_id: r for r in scheduler.book.running_instances()}
    hosts = list(hosts)
    on_hosts: dict[str, str] = {}
    for h in hosts:
        now = h.now()
        used = h.calendar.usage_at(now)
        cap = h.calendar.capacity
        if np.any(used > cap + EPS):
            out.append(Finding("host.over_capacity", h.name, f"uses {used.tolist()} of {cap.tolist()}"))
        for ref in h.list_instances():
            on_hosts[ref.instance_id] = h.name
            if ref.instance_id not in running:
                out.append(Finding("instance.orphan", ref.instance_id, f"runs on {h.name} for no running request"))
        out.extend(_unheld(h, set(running), now, grace))
    for v in vaults:
        out.extend(_unheld(v, set(running), v.now(), grace))
    for iid, ref in running.items():
        if on_hosts.get(iid) != ref.host:
            out.append(Finding("instance.ghost", iid, f"counted as running on {ref.host}, which does not run it"))
    for c in classes:
        have = {r.instance_id for r in c.list_instances()}
        want = {i for i, r in running.items() if r.class_name == c.name}
        if have != want:
            out.append(Finding("class.count", c.name, f"counts {sorted(have)}, the scheduler runs {sorted(want)}"))
    active = {e.id for e in scheduler.book.entries() if e.state in ("admitted", "placing", "running")}
    held = getattr(scheduler.pools, "held", None)
    if callable(held):
        charged = set(held())
        for rid in sorted(charged - active):
            out.append(Finding("pool.allocation", rid, "holds a pool allocation but is not admitted"))
        for rid in sorted(active - charged):
            out.append(Finding("pool.allocation", rid, "is admitted but holds no pool allocation"))
        if not charged:
            for path, entry in scheduler.pools.report().items():
                alloc = entry.get("allocation", {})
                if any(abs(float(v)) > EPS for v in alloc.values()):
                    out.append(Finding("pool.allocation", path, f"allocation {alloc} with nothing admitted"))
    shares = scheduler.shares
    if shares is not None:
        for rid in sorted(set(shares.charged()) - active):
            out.append(Finding("allotment.held", rid, "holds a DUCC allotment but is not admitted"))
    return out


def _unheld(resource: Any, running: set[str], now: float, grace: float) -> list[Finding]:
    """Open reservations used by no running instance that outlive the grace."""
    out = []
    is_host = hasattr(resource, "list_instances")
    for token in resource.reservations():
        users = resource.holders_of(token.token_id)
        if users:
            # a host's holders are instance ids (a vault's are its own use ids)
            if is_host and not users & running:
                out.append(Finding("reservation.unheld", token.token_id,
                                   f"held on {resource.name} by {sorted(users)}, none of them running"))
        elif token.expires_at > now + grace + EPS:
            out.append(Finding("reservation.unheld", token.token_id,
                               f"open on {resource.name} until {token.expires_at:g}, used by nobody"))
    return out
