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

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from legionrm.collection.view import ACCESS, CollectionSnapshot
from legionrm.mil import compile_query
from legionrm.models import Identity
from legionrm.scheduler.planning.snaptables import VAULT_ATTRIBUTES, VaultTable, vault_table

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
        read = _columns(snap, compile_query(text).attributes)
        mask = _from_columns(("mask", text), read, lambda: snap.mask(text, include_unavailable=True)) & snap.available()
        mask.flags.writeable = False
        kept["mask", text] = mask
    return mask


def accepts_mask(snap: CollectionSnapshot, caller: Identity) -> np.ndarray:
    """``snap.accepts(caller)`` (the rows whose access lists accept ``caller``), read-only."""
    kept = _kept(snap)
    key = ("accepts", caller.user, caller.class_name, caller.groups)
    mask = kept.get(key)
    if mask is None:
        mask = kept[key] = _from_columns(key, (*_columns(snap, (ACCESS,)), snap.policies), lambda: snap.accepts(caller))
        mask.flags.writeable = False
    return mask


def vaults_of(snap: CollectionSnapshot) -> VaultTable:
    """``vault_table(snap)`` (do not change it)."""
    kept = _kept(snap)
    table = kept.get("vaults")
    if table is None:
        rows = snap.rows('$kind == "vault"', include_unavailable=True)
        on = snap.available()[rows]
        read = (*_columns(snap, VAULT_ATTRIBUTES), snap.table.membership, rows.tobytes(), on.tobytes())
        table = kept["vaults"] = _from_columns("vaults", read, lambda: vault_table(snap))
    return table


_across: dict[Any, tuple[tuple[object, ...], Any]] = {}
"""Answers kept across tables, by what was asked: each with what it was worked out from (:func:`_from_columns`)."""


def _columns(snap: CollectionSnapshot, attrs: Iterable[str]) -> tuple[object, ...]:
    """What a MIL query over ``attrs`` reads of ``snap``'s table: its length and strings, and those
    columns (immutable objects: the table hands out the same one while nothing is written to it)."""
    table = snap.table
    return (len(table), table.strings, *(table.column(a) for a in sorted(attrs)))


def _from_columns(key: Any, read: tuple[object, ...], work_out: Callable[[], Any]) -> Any:
    """``work_out()``, or the answer to ``key`` worked out last from the same ``read``: the same
    objects (identity: columns, held here while kept, so never another's recycled memory) and equal
    values (lengths, policies, bytes).  Some columns of the Collection change with every heartbeat, but
    not those a host query or an access list reads, unless a host's own values change."""
    got = _across.get(key)
    if got is not None and len(got[0]) == len(read) and all(
            a is b or (type(a) in _BY_VALUE and type(a) is type(b) and a == b) for a, b in zip(got[0], read)):
        return got[1]
    answer = work_out()
    if isinstance(answer, np.ndarray):
        answer.flags.writeable = False
    if len(_across) >= _KEEP:  # (the oldest first: an answer of requests long gone)
        del _across[next(iter(_across))]
    _across[key] = (read, answer)
    return answer


_BY_VALUE = (int, bytes, tuple)
"""What :func:`_from_columns` compares by value (lengths, rows, policies); anything else by identity alone."""

_KEEP = 256
"""At most this many answers kept across tables (one a distinct constraint, caller or the vaults)."""
