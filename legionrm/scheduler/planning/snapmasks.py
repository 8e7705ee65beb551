"""What the planner reads of a Collection snapshot that only its table
decides, kept while the table is the same: the rows a MIL query matches
(:func:`query_mask`), those whose access lists accept a caller
(:func:`accepts_mask`) and the vaults (:func:`vaults_of`).

A snapshot is taken for every attempt and every pass, and each is a new
object; between two changes of the Collection they share one table (its
contents copy-on-write: any write makes a new one), so a pass's attempts
and the pass itself would otherwise read the same masks again (the
availability of every host, then the query over it).  The table, the
resources available and the query it serves decide both answers (the
same table shows the same resources available from a time until the
first of them goes stale, :meth:`~CollectionSnapshot.alive_until`): while
all three are the same, the last answers are given again.  Thread-safe (a
race at worst computes an answer twice).  Pure; no Ray.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from legionrm.collection.view import CollectionSnapshot
from legionrm.models import Identity
from legionrm.scheduler.planning.snaptables import VaultTable, vault_table

_last: tuple[object, float, float, str | None, dict[Any, Any]] | None = None
"""The table, the times from and until which it shows the same resources available, and served query of the
answers kept, and the answers by what was asked."""


def _kept(snap: CollectionSnapshot) -> dict[Any, Any]:
    """The answers kept for ``snap``'s table, served query and available resources (a new, empty set when
    another: the same table read at a time from the first answer's until the first of them goes stale)."""
    global _last
    last, now = _last, float(snap.now)
    if last is None or last[0] is not snap.table or not last[1] <= now <= last[2] or last[3] != snap.served_query:
        last = _last = (snap.table, now, snap.alive_until(), snap.served_query, {})
    return last[4]


def query_mask(snap: CollectionSnapshot, text: str) -> np.ndarray:
    """``snap.mask(text)`` (the rows that match ``text`` and are available), read-only.  Raises MILError."""
    kept = _kept(snap)
    mask = kept.get(("mask", text))
    if mask is None:
        mask = snap.mask(text)
        mask.flags.writeable = False
        kept["mask", text] = mask
    return mask


def accepts_mask(snap: CollectionSnapshot, caller: Identity) -> np.ndarray:
    """``snap.accepts(caller)`` (the rows whose access lists accept ``caller``), read-only."""
    kept = _kept(snap)
    key = ("accepts", caller.user, caller.class_name, caller.groups)
    mask = kept.get(key)
    if mask is None:
        mask = snap.accepts(caller)
        mask.flags.writeable = False
        kept[key] = mask
    return mask


def vaults_of(snap: CollectionSnapshot) -> VaultTable:
    """``vault_table(snap)`` (do not change it)."""
    kept = _kept(snap)
    table = kept.get("vaults")
    if table is None:
        table = kept["vaults"] = vault_table(snap)
    return table
