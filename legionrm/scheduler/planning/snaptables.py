"""Column tables the planner reads from one Collection snapshot: the hosts
(:class:`~legionrm.scheduler.planning.pipeline.HostTable`) and the vaults with the
hosts each serves (:class:`VaultTable`).  Pure; no Ray.
"""

from __future__ import annotations

import fnmatch

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


def base_table(snap: CollectionSnapshot) -> HostTable:
    """Every available host in the snapshot as columns, name order.  Read-only
    arrays: the table of the same table contents and served hosts is built
    once while the same hosts are available (from its time until the first of
    them goes stale: a pass and each of its attempts read it again, from
    snapshots of an unchanged Collection, and so do later passes before a
    host reports)."""
    global _last
    last, now = _last, float(snap.now)
    if last is not None and last[0] is snap.table and last[1] <= now <= last[2] and last[3] == snap.served_query:
        return last[4]
    table = _build(snap)
    for value in vars(table).values():
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
    # (a host stale at ``now`` stays stale later while the table is the same: its heartbeat is older than now)
    _last = (snap.table, now, snap.stale_at(table.row), snap.served_query, table)
    return table


def _build(snap: CollectionSnapshot) -> HostTable:
    rows = snap.rows('$kind == "host"')
    num = lambda attr, default: snap.numeric(attr, rows, default)  # noqa: E731
    cpus, mem, gpus = num("cpus", 0.0), num("memory_gb", 0.0), num("gpus", 0.0)
    load = num("load", 0.0)
    has_policy = snap.numeric("owner_policies", rows, 0.0)
    risk = np.clip(0.5 * np.minimum(load / np.maximum(cpus, 1.0), 1.0) + 0.5 * (has_policy > 0), 0.0, 1.0)
    return HostTable(
        row=rows, row_names=snap.table.names,  # (an object array of str: the hosts' names are read where needed)
        cpus=cpus, memory_gb=mem, gpus=gpus,
        free_cpus=_or(num("free_cpus", np.nan), cpus),
        free_memory_gb=_or(num("free_memory_gb", np.nan), mem),
        free_gpus=_or(num("free_gpus", np.nan), gpus),
        load=load, instances=num("instances", 0.0),
        next_event=_or(num("next_event", np.nan), np.full(len(rows), INF)),
        risk=risk, **_kind_columns(snap, rows),
    )


def snapshot_kinds(snap: CollectionSnapshot) -> tuple[str, ...]:
    """The custom resource kinds some resource of ``snap`` holds: an attribute
    ``NAME`` exported beside ``free_NAME`` (a host's calendar dimension), but
    the built-in ones; name order."""
    names = set(snap.table.attribute_names())
    return tuple(sorted(a for a in names if f"free_{a}" in names and a not in BUILTIN_KINDS))


def _kind_columns(snap: CollectionSnapshot, rows: np.ndarray) -> dict[str, object]:
    """HostTable's ``kinds``, ``kind_total`` and ``kind_free`` for ``rows`` (none: no columns)."""
    kinds = snapshot_kinds(snap)
    if not kinds:
        return {}
    total = np.stack([snap.numeric(k, rows, 0.0) for k in kinds], axis=1)
    free = np.stack([_or(snap.numeric(f"free_{k}", rows, np.nan), total[:, i]) for i, k in enumerate(kinds)], axis=1)
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
