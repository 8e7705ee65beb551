"""What the planner reads of a Collection snapshot that only its table
decides, kept while the table is the same: the rows a MIL query matches
(:func:`query_mask`) and the vaults (:func:`vaults_of`).

A snapshot is taken for every attempt and every pass, and each is a new
object; between two changes of the Collection they share one table (its
contents copy-on-write: any write makes a new one), so a pass's attempts
and the pass itself would otherwise read the same masks again (the
availability of every host, then the query over it).  The table, the
snapshot's time and the query it serves decide both answers: while all
three are the same, the last answers are given again.  Thread-safe (a
race at worst computes an answer twice).  Pure; no Ray.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from legionrm.collection.collection import CollectionSnapshot
from legionrm.scheduler.planning.snaptables import VaultTable, vault_table

_last: tuple[object, float, str | None, dict[Any, Any]] | None = None
"""The table, time and served query of the answers kept, and the answers by what was asked."""


def _kept(snap: CollectionSnapshot) -> dict[Any, Any]:
    """The answers kept for ``snap``'s table, time and served query (a new, empty set when another)."""
    global _last
    last = _last
    if last is None or last[0] is not snap.table or last[1] != float(snap.now) or last[2] != snap.served_query:
        last = _last = (snap.table, float(snap.now), snap.served_query, {})
    return last[3]


def query_mask(snap: CollectionSnapshot, text: str) -> np.ndarray:
    """``snap.mask(text)`` (the rows that match ``text`` and are available), read-only.  Raises MILError."""
    kept = _kept(snap)
    mask = kept.get(("mask", text))
    if mask is None:
        mask = snap.mask(text)
        mask.flags.writeable = False
        kept["mask", text] = mask
    return mask


def vaults_of(snap: CollectionSnapshot) -> VaultTable:
    """``vault_table(snap)`` (do not change it)."""
    kept = _kept(snap)
    table = kept.get("vaults")
    if table is None:
        table = kept["vaults"] = vault_table(snap)
    return table
