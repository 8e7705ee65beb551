"""The node table: the hosts a placement sees, as numpy columns, in one fixed order.

Built once (per cycle, or when hosts join or leave), never per request.  Row
``i`` is the host with node index ``i``: hosts are sorted once by
``node_sort_key`` (PBS default ``sort_priority HIGH``), ties keep the order
they were given in, so *ascending index = node_sort_key order* and every
bitmap over hosts is indexed the same way.

Resource values are typed by what the hosts report: booleans, numbers, sizes
(kb, :class:`~legionrm.scheduler.placement.select.Size`), strings and string arrays.
A resource has one kind across all hosts; a host may leave it unset.  Every
host also carries ``host`` and ``vnode`` (its name) unless it sets them;
two hosts with the same ``host`` make the complex multi-vnode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Literal, Mapping, Sequence, cast

import numpy as np

from legionrm.scheduler.placement.select import Size, classify

Kind = Literal["bool", "num", "size", "str", "strarr"]

DEFAULT_RESOURCES: tuple[str, ...] = ("ncpus", "mem", "arch", "host", "vnode", "aoe", "eoe")
"""PBS's default sched_config ``resources:`` line."""

DEFAULT_SORT_KEY: tuple[str, ...] = ("sort_priority HIGH",)


@dataclass(frozen=True)
class NodeSpec:
    """One host as configured: name, priority, owning queue and resources_available."""

    name: str
    priority: int = 0
    queue: str | None = None
    resources: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class SortKey:
    """One ``node_sort_key`` term: ``RES HIGH|LOW [total|assigned|unused]``."""

    resource: str
    high: bool
    qualifier: str = "total"

    @classmethod
    def parse(cls, text: str) -> "SortKey":
        parts = text.split()
        if len(parts) not in (2, 3) or parts[1].upper() not in ("HIGH", "LOW"):
            raise ValueError(f"node_sort_key {text!r}: expected 'RES HIGH|LOW [total|assigned|unused]'")
        qual = parts[2].lower() if len(parts) == 3 else "total"
        if qual not in ("total", "assigned", "unused"):
            raise ValueError(f"node_sort_key {text!r}: qualifier must be total, assigned or unused")
        return cls(parts[0], parts[1].upper() == "HIGH", qual)


@dataclass
class Column:
    """One resource over all hosts.

    ``num``/``size``: ``values`` float64 (0 where unset) and ``isset``.
    ``bool``: ``values`` bool (unset is False).  ``str``: ``codes`` int32 into
    ``categories`` (-1 unset).  ``strarr``: ``sets`` (tuple per host, () unset).
    """

    name: str
    kind: Kind
    values: np.ndarray | None = None
    isset: np.ndarray | None = None
    codes: np.ndarray | None = None
    categories: list[str] = field(default_factory=list)
    sets: list[tuple[str, ...]] | None = None
    _masks: dict[object, np.ndarray] = field(default_factory=dict)

    @property
    def consumable(self) -> bool:
        return self.kind in ("num", "size")

    # Which arrays a column has follows from ``kind`` (see above), which the type
    # checker cannot see: the methods below cast the ones their kind has.

    def value(self, i: int) -> object:
        """The value on host ``i`` (None when unset; bools are never unset)."""
        if self.kind == "bool":
            return bool(cast(np.ndarray, self.values)[i])
        if self.kind in ("num", "size"):
            if not cast(np.ndarray, self.isset)[i]:
                return None
            v = float(cast(np.ndarray, self.values)[i])
            return Size(v) if self.kind == "size" else (int(v) if v.is_integer() else v)
        if self.kind == "str":
            c = int(cast(np.ndarray, self.codes)[i])
            return None if c < 0 else self.categories[c]
        s = cast("list[tuple[str, ...]]", self.sets)[i]
        return s if s else None

    def equals_mask(self, value: str, casefold: bool = False) -> np.ndarray:
        """Hosts whose string (or any string-array element) equals ``value``; cached."""
        key = (value, casefold)
        m = self._masks.get(key)
        if m is not None:
            return m
        if self.kind == "str":
            codes = cast(np.ndarray, self.codes)
            if casefold:
                hits = [i for i, c in enumerate(self.categories) if c.lower() == value.lower()]
            else:
                hits = [i for i, c in enumerate(self.categories) if c == value]
            m = np.isin(codes, np.asarray(hits, dtype=np.int32)) if hits else np.zeros(len(codes), bool)
        elif self.kind == "strarr":
            sets = cast("list[tuple[str, ...]]", self.sets)
            if casefold:
                v = value.lower()
                m = np.fromiter((any(x.lower() == v for x in s) for s in sets), bool, len(sets))
            else:
                m = np.fromiter((value in s for s in sets), bool, len(sets))
        else:
            m = np.zeros(len(cast(np.ndarray, self.values)), bool)
        m.flags.writeable = False
        self._masks[key] = m
        return m

    def signature_codes(self) -> np.ndarray:
        """An int code per host such that equal codes mean equal values (unset has its own code)."""
        if self.kind == "bool":
            return cast(np.ndarray, self.values).astype(np.int64)
        if self.kind in ("num", "size"):
            keyed = np.where(cast(np.ndarray, self.isset), cast(np.ndarray, self.values), -np.inf)
            _, inv = np.unique(keyed, return_inverse=True)
            return inv.astype(np.int64)
        if self.kind == "str":
            return cast(np.ndarray, self.codes).astype(np.int64)
        lookup: dict[tuple[str, ...], int] = {}
        sets = cast("list[tuple[str, ...]]", self.sets)
        return np.fromiter((lookup.setdefault(tuple(sorted(s)), len(lookup)) for s in sets), np.int64, len(sets))


def _kind_of(value: object) -> Kind:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, Size):
        return "size"
    if isinstance(value, (int, float)):
        return "num"
    if isinstance(value, tuple):
        return "strarr"
    return "str"


class NodeTable:
    """Hosts as columns, sorted once by ``node_sort_key``.

    ``resources`` is the bucket / matching resource list (PBS's sched_config
    ``resources:`` line); requested resources outside it are ignored except
    booleans, which are always honoured.  An empty list means every resource
    (as an empty ``resources:`` line does upstream); None means PBS's default
    line.  Raises ValueError naming the host and resource when a resource has
    different kinds on different hosts.
    """

    def __init__(
        self,
        nodes: Sequence[NodeSpec],
        *,
        resources: Iterable[str] | None = None,
        node_sort_key: Sequence[str] | str | None = None,
    ) -> None:
        keys = [node_sort_key] if isinstance(node_sort_key, str) else list(node_sort_key or DEFAULT_SORT_KEY)
        self.sort_keys: tuple[SortKey, ...] = tuple(SortKey.parse(k) for k in keys)
        self.resources: tuple[str, ...] = tuple(resources) if resources is not None else DEFAULT_RESOURCES
        self.check_all: bool = not self.resources
        """True when the resources line is empty: every resource is checked."""
        names = [n.name for n in nodes]
        if len(set(names)) != len(names):
            dup = next(x for x in names if names.count(x) > 1)
            raise ValueError(f"host {dup!r} is defined twice")
        typed: list[dict[str, object]] = []
        for n in nodes:
            vals = {k: classify(v) for k, v in n.resources.items()}
            vals.setdefault("host", n.name)
            vals.setdefault("vnode", n.name)
            typed.append(vals)
        order = self._order(nodes, typed)
        self.specs: tuple[NodeSpec, ...] = tuple(nodes[i] for i in order)
        typed = [typed[i] for i in order]
        self.names: list[str] = [s.name for s in self.specs]
        self.index: dict[str, int] = {n: i for i, n in enumerate(self.names)}
        self.n = len(self.names)
        self.priority = np.fromiter((s.priority for s in self.specs), np.int64, self.n)
        qnames = sorted({s.queue for s in self.specs if s.queue is not None})
        self.queues: list[str] = qnames
        qidx = {q: i for i, q in enumerate(qnames)}
        self.queue_code = np.fromiter((qidx[s.queue] if s.queue is not None else -1 for s in self.specs), np.int64, self.n)
        self.columns: dict[str, Column] = self._columns(typed)
        hosts = self.columns.get("host")
        self.multi_vnode: bool = hosts is not None and hosts.kind == "str" and len(set(cast(np.ndarray, hosts.codes).tolist())) < self.n
        self._universe_cache: dict[object, np.ndarray] = {}
        self.derived: dict[object, object] = {}
        """What other parts derive from the table alone, kept with it (the
        bucket membership per signature): the table never changes, so neither do they."""

    # -- construction --------------------------------------------------------

    def _order(self, nodes: Sequence[NodeSpec], typed: list[dict[str, object]]) -> list[int]:
        def keyval(i: int, k: SortKey) -> float:
            if k.resource == "sort_priority" or k.resource == "priority":
                v: object = nodes[i].priority
            else:
                v = typed[i].get(k.resource, 0)
            if isinstance(v, bool):
                v = float(v)
            if not isinstance(v, (int, float)):
                v = 0.0
            return -float(v) if k.high else float(v)

        # 'unused' / 'assigned' keys depend on use, so the fixed order uses totals;
        # such keys also turn the bucket path off (see placement.choose_path).
        return sorted(range(len(nodes)), key=lambda i: tuple(keyval(i, k) for k in self.sort_keys))

    def _columns(self, typed: list[dict[str, object]]) -> dict[str, Column]:
        kinds: dict[str, Kind] = {}
        for row, vals in zip(self.names, typed):
            for k, v in vals.items():
                kind = _kind_of(v)
                prev = kinds.get(k)
                if prev is None:
                    kinds[k] = kind
                elif {prev, kind} == {"num", "size"}:
                    kinds[k] = "size"  # a bare number next to sizes is a size (in bytes)
                elif {prev, kind} == {"str", "strarr"}:
                    kinds[k] = "strarr"  # a string is a one-element string array
                elif prev != kind:
                    raise ValueError(f"host {row!r}: resource {k!r} is {kind} here but {prev} on other hosts")
        cols: dict[str, Column] = {}
        n = self.n
        for name, kind in kinds.items():
            raw = [vals.get(name) for vals in typed]
            if kind == "bool":
                cols[name] = Column(name, kind, values=np.fromiter((bool(v) for v in raw), bool, n))
            elif kind in ("num", "size"):
                nums = cast("list[float | None]", raw)  # a number column: numbers (or unset) only
                isset = np.fromiter((v is not None for v in nums), bool, n)
                if kind == "size":  # a bare number among sizes is bytes, as in PBS
                    nums = [v if v is None or isinstance(v, Size) else Size(math.ceil(float(v) / 1024)) for v in nums]
                amounts = np.fromiter((float(v) if v is not None else 0.0 for v in nums), np.float64, n)
                cols[name] = Column(name, kind, values=amounts, isset=isset)
            elif kind == "str":
                strs = cast("list[str | None]", raw)  # a string column: strings (or unset) only
                cats: dict[str, int] = {}
                codes = np.fromiter((cats.setdefault(v, len(cats)) if v is not None else -1 for v in strs), np.int32, n)
                cols[name] = Column(name, kind, codes=codes, categories=list(cats))
            else:
                sets = [tuple(v) if isinstance(v, tuple) else ((v,) if isinstance(v, str) else ()) for v in raw]
                cols[name] = Column(name, kind, sets=sets)
        return cols

    # -- queries -------------------------------------------------------------

    @property
    def booleans(self) -> tuple[str, ...]:
        """Every boolean resource any host defines (each splits buckets; unset is False)."""
        return tuple(k for k, c in self.columns.items() if c.kind == "bool")

    def signature_resources(self, requested: Iterable[str] | None = None) -> tuple[str, ...]:
        """The resources a bucket signature covers: the resources line (every
        resource when it is empty) minus host and vnode, narrowed to
        ``requested`` when given (upstream builds buckets from the resources
        the cycle's requests name, L13), plus every boolean; only those some
        host defines."""
        line = tuple(self.columns) if self.check_all else self.resources
        wanted = None if requested is None else set(requested)
        out = [
            r for r in line
            if r not in ("host", "vnode") and r in self.columns and (wanted is None or r in wanted)
        ]
        out += [b for b in self.booleans if b not in out]
        return tuple(out)

    def checked(self, resource: str) -> bool:
        """Whether a requested resource is honoured: on the resources line (any
        resource when the line is empty), or a boolean some host defines."""
        if self.check_all or resource in self.resources:
            return True
        col = self.columns.get(resource)
        return col is not None and col.kind == "bool"

    def universe(self, queue: str | None) -> np.ndarray:
        """Host indices a job in ``queue`` may use: the queue's hosts when it owns
        any, else the hosts tied to no queue (PBS queue-associated nodes)."""
        key = queue if queue in self.queues else None
        hit = self._universe_cache.get(key)
        if hit is None:
            code = self.queues.index(key) if key is not None else -1
            hit = np.flatnonzero(self.queue_code == code)
            hit.flags.writeable = False
            self._universe_cache[key] = hit
        return hit

    def total(self, resource: str) -> np.ndarray:
        """resources_available of a consumable per host (0 where unset or not numeric)."""
        col = self.columns.get(resource)
        if col is None or not col.consumable:
            return np.zeros(self.n)
        return cast(np.ndarray, col.values)  # a consumable column has values

    def consumables(self) -> tuple[str, ...]:
        return tuple(k for k, c in self.columns.items() if c.consumable)

    def kind(self, resource: str) -> Kind | None:
        col = self.columns.get(resource)
        return col.kind if col is not None else None


