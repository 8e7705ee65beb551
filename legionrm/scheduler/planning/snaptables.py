"""Column tables the planner reads from one Collection snapshot: the hosts
(:class:`~legionrm.scheduler.planning.pipeline.HostTable`) and the vaults with the
hosts each serves (:class:`VaultTable`).  Pure; no Ray.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable

import numpy as np

from legionrm import codes
from legionrm.collection.view import CollectionSnapshot
from legionrm.mil import values as V
from legionrm.models import Identity, ObjectRequest, Refusal
from legionrm.models.reservations import BUILTIN_KINDS
from legionrm.scheduler.planning.pipeline import INF, HostTable


def base_group(snap: CollectionSnapshot, host: str) -> str | None:
    g = snap.record(host).attributes.get("host_group")
    return str(g) if g is not None else None


def host_groups(snap: CollectionSnapshot, rows: np.ndarray) -> list[str | None]:
    """:func:`base_group` of each of the snapshot's ``rows`` (None where a
    resource names no host group), read from the ``host_group`` column: no
    per-host record lookup."""
    col = snap.table.column("host_group")
    if col is None:
        return [None] * len(rows)
    m, s = len(rows), col.s  # (a column's arrays: of its length, or 0-d for every row)
    tags = [col.uniform] * m if col.uniform is not None else col.tag[rows].tolist()  # type: ignore[index]
    ids = [0] * m if s is None else [s.item()] * m if s.ndim == 0 else s[rows].tolist()
    strings, STR, UNDEF = snap.table.strings.strings, V.STR, V.UNDEF
    # (a non-string group is rare: read as base_group reads it)
    return [strings[c] if t == STR else None if t == UNDEF else base_group(snap, str(snap.table.names[r]))
            for t, c, r in zip(tags, ids, rows.tolist())]


_last: tuple[object, float, float, str | None, HostTable] | None = None
"""The last table :func:`base_table` built, with what it was built from: the table contents, the time
it was built at and the time the first of its hosts goes stale, and the served hosts."""

_made: dict[object, tuple[tuple[object, ...], np.ndarray]] = {}
"""What the last build worked out, each with what it was worked out from (see :class:`_Reuse`)."""


def base_table(snap: CollectionSnapshot) -> HostTable:
    """Every available host in the snapshot as columns, name order.  Read-only
    arrays: the table of the same table contents and served hosts is built
    once while the same hosts are available (from its time until the first of
    them goes stale: a pass and each of its attempts read it again, from
    snapshots of an unchanged Collection, and so do later passes before a
    host reports).  A table built anew (the Collection changed) reuses each
    array of the last one that is worked out from the same hosts and the same
    columns (:class:`_Reuse`): a heartbeat rewrites a few columns of a few hosts."""
    global _last, _made
    last, now = _last, float(snap.now)
    if last is not None and last[0] is snap.table and last[1] <= now <= last[2] and last[3] == snap.served_query:
        return last[4]
    reuse = _Reuse(snap, _made)
    table = _build(snap, reuse)
    for value in vars(table).values():
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
    # (a host stale at ``now`` stays stale later while the table is the same: its heartbeat is older than now)
    _last, _made = (snap.table, now, snap.stale_at(table.row), snap.served_query, table), reuse.made
    return table


class _Reuse:
    """The arrays of one build, each the last build's when worked out from the very same inputs.

    A snapshot's Column is immutable, and the Collection's table hands out the same Column
    object again while nothing is written to it (a write of equal values writes nothing):
    so an array worked out from the same Column objects (compared by identity, and held
    here, so never another's recycled memory) and the same rows holds the same values.
    The hosts' rows are the last build's array when equal in value, so that what is read
    at them compares by identity too."""

    def __init__(self, snap: CollectionSnapshot, last: dict[object, tuple[tuple[object, ...], np.ndarray]]) -> None:
        self.snap, self.last = snap, last
        self.made: dict[object, tuple[tuple[object, ...], np.ndarray]] = {}

    def rows(self) -> np.ndarray:
        rows = self.snap.rows('$kind == "host"')
        got = self.last.get("rows")
        if got is not None and np.array_equal(got[1], rows):
            rows = got[1]
        self.made["rows"] = ((), rows)
        return rows

    def derived(self, key: object, inputs: tuple[object, ...], work_out: Callable[[], np.ndarray]) -> np.ndarray:
        """``work_out()``, or the last build's ``key`` when it was worked out from the same ``inputs`` (by identity)."""
        for kept in (self.made, self.last):
            got = kept.get(key)
            if got is not None and len(got[0]) == len(inputs) and all(a is b for a, b in zip(got[0], inputs)):
                out = got[1]
                break
        else:
            out = work_out()
        self.made[key] = (inputs, out)
        return out

    def numeric(self, attr: str, rows: np.ndarray, default: float) -> np.ndarray:
        """``snap.numeric(attr, rows, default)``."""
        return self.derived(("numeric", attr, default), (self.snap.table.column(attr), rows),
                            lambda: self.snap.numeric(attr, rows, default))

    def either(self, attr: str, rows: np.ndarray, fallback: np.ndarray) -> np.ndarray:
        """``attr`` at ``rows`` where a number, ``fallback`` elsewhere."""
        values = self.numeric(attr, rows, np.nan)
        return self.derived(("or", attr), (values, fallback), lambda: _or(values, fallback))


def _build(snap: CollectionSnapshot, reuse: _Reuse) -> HostTable:
    rows = reuse.rows()
    num = lambda attr, default: reuse.numeric(attr, rows, default)  # noqa: E731
    cpus, mem, gpus = num("cpus", 0.0), num("memory_gb", 0.0), num("gpus", 0.0)
    load = num("load", 0.0)
    has_policy = num("owner_policies", 0.0)
    risk = reuse.derived("risk", (load, cpus, has_policy), lambda: np.clip(
        0.5 * np.minimum(load / np.maximum(cpus, 1.0), 1.0) + 0.5 * (has_policy > 0), 0.0, 1.0))
    either = lambda attr, fallback: reuse.either(attr, rows, fallback)  # noqa: E731
    return HostTable(
        row=rows, row_names=snap.table.names,  # (an object array of str: the hosts' names are read where needed)
        cpus=cpus, memory_gb=mem, gpus=gpus,
        free_cpus=either("free_cpus", cpus),
        free_memory_gb=either("free_memory_gb", mem),
        free_gpus=either("free_gpus", gpus),
        load=load, instances=num("instances", 0.0),
        next_event=either("next_event", reuse.derived("never", (rows,), lambda: np.full(len(rows), INF))),
        risk=risk, **_kind_columns(snap, rows, reuse),
    )


def snapshot_kinds(snap: CollectionSnapshot) -> tuple[str, ...]:
    """The custom resource kinds some resource of ``snap`` holds: an attribute
    ``NAME`` exported beside ``free_NAME`` (a host's calendar dimension), but
    the built-in ones; name order."""
    names = set(snap.table.attribute_names())
    return tuple(sorted(a for a in names if f"free_{a}" in names and a not in BUILTIN_KINDS))


def _kind_columns(snap: CollectionSnapshot, rows: np.ndarray, reuse: _Reuse) -> dict[str, object]:
    """HostTable's ``kinds``, ``kind_total`` and ``kind_free`` for ``rows`` (none: no columns)."""
    kinds = snapshot_kinds(snap)
    if not kinds:
        return {}
    totals = tuple(reuse.numeric(k, rows, 0.0) for k in kinds)
    frees = tuple(reuse.either(f"free_{k}", rows, t) for k, t in zip(kinds, totals))
    total = reuse.derived(("kind_total", kinds), totals, lambda: np.stack(totals, axis=1))
    free = reuse.derived(("kind_free", kinds), frees, lambda: np.stack(frees, axis=1))
    return {"kinds": kinds, "kind_total": total, "kind_free": free}


def _or(values: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(values), fallback, values)


class VaultTable:
    """Vaults as the snapshot knows them, with the hosts each serves."""

    def __init__(self, names: list[str], serves: list[tuple[str, ...]], free: list[float]) -> None:
        self.names, self.serves, self.free = names, serves, free

    def pick(
        self, host: str, req: ObjectRequest, used: dict[str, float], snap: CollectionSnapshot, caller: Identity
    ) -> str | None | Refusal:
        """The vault for an instance on ``host``: one that serves it, matches the
        request's vault constraint, accepts the caller and has the storage,
        most free first.  None when no vault serves the host and none is
        needed; a Refusal when storage is needed and none can give it."""
        if not self.names:
            return None if req.storage_gb == 0 else Refusal(code=codes.VAULT_NONE, reason="no vaults", by="vault_pairing")
        ident = Identity(user=caller.user, class_name=req.class_name, groups=caller.groups)
        ok = set(snap.names(f'$kind == "vault" and ({req.vault_constraint})', ident))
        best: tuple[float, str] | None = None
        for name, pats, free in zip(self.names, self.serves, self.free):
            if name not in ok or not _serves(pats, host):
                continue
            left = free - used.get(name, 0.0)
            if left + 1e-9 >= req.storage_gb and (best is None or (-left, name) < best):
                best = (-left, name)
        if best is None:
            if req.storage_gb == 0 and not any(_serves(pats, host) for pats in self.serves):
                return None
            return Refusal(code=codes.VAULT_NONE, reason=f"no vault serving {host} can hold {req.storage_gb:g} GB for this caller",
                           by="vault_pairing")
        used[best[1]] = used.get(best[1], 0.0) + req.storage_gb
        return best[1]


def _serves(patterns: tuple[str, ...], host: str) -> bool:
    """Does a vault with these ``serves`` patterns serve ``host`` (no patterns: every host)?"""
    return not patterns or any(fnmatch.fnmatchcase(host, p) for p in patterns)


VAULT_ATTRIBUTES = ("serves", "free_storage_gb", "storage_gb")
"""What :func:`vault_table` reads of each available vault (besides its name)."""


def vault_table(snap: CollectionSnapshot) -> VaultTable:
    names = snap.names('$kind == "vault"')
    serves, free = [], []
    for n in names:
        attrs = snap.record(n).attributes
        s = attrs.get("serves", "")
        serves.append(tuple(p.strip() for p in str(s).split(",") if p.strip()))
        free.append(float(attrs.get("free_storage_gb", attrs.get("storage_gb", 0.0))))
    return VaultTable(names, serves, free)
