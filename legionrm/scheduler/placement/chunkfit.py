"""Does a chunk fit a host?  Shared by the bucket and per-node paths.

A chunk is compiled once against the node table (:func:`compile_request`):
each requested resource becomes a :class:`Check` with its value converted to
the host column's units.  Resources outside the table's resource line are
ignored, booleans are always checked, and the server's default chunk
(``ncpus=1``) is appended to a chunk that does not name ncpus, as PBS does.

The check order is PBS's: non-consumables in reverse order of appearance,
then consumables in order of appearance; it decides which mismatch a refusal
names.  :func:`chunks_per_host` answers "how many of this chunk fit on each
of these hosts" as a numpy vector; :func:`host_reason` gives the text for one
host; :func:`prefilter` is the aggregate test on a set of hosts that both
paths run before searching.
"""

from __future__ import annotations

import math
from typing import NamedTuple, cast

import numpy as np

from legionrm.errors import SelectSyntaxError
from legionrm.scheduler.placement.nodes import Column, NodeTable
from legionrm.scheduler.placement.nodestate import SetSums, StateView
from legionrm.scheduler.placement.select import (
    Chunk,
    ResValue,
    SelectRequest,
    Size,
    classify,
    exec_amount,
    format_value,
)

# PBS comment texts (the parts after "Not Running: " / "Can Never Run: ").
NO_NODE_RESOURCES = "No available resources on nodes"
CANT_SPAN_PSET = "can't fit in the largest placement set, and can't span psets"
NO_FREE_NODES = "Not enough free nodes available"
NO_TOTAL_NODES = "Not enough total nodes available"
NOT_ENOUGH_NODES_AVAIL = "Not enough of the right type of nodes are available"
RESERVATION_CONFLICT = "Job would conflict with reservation or top job"
NODE_NOT_EXCL = "Job is requesting an exclusive node and node is in use"
NODE_PLACE_PACK = "Node ineligible because job requested pack placement and won't fit on node"
INSUFFICIENT = "Insufficient amount of resource: {res} {detail}"
INVALID_STATE = "Node is in an ineligible state: {state}"

DEFAULT_CHUNK: dict[str, ResValue] = {"ncpus": 1}


class Check(NamedTuple):
    """One requested resource of a chunk, in host-column units."""

    res: str
    value: object  # bool, str, or a number (kb for size columns)
    consumable: bool
    written: object  # the value as requested (for messages)

    @property
    def amount(self) -> float:
        """``value`` of a consumable check: always a number."""
        return cast(float, self.value)


class CompiledChunk(NamedTuple):
    """One select chunk compiled against a node table (immutable).  A named
    tuple, not a dataclass: one is made per chunk of every request placed,
    and a tuple is the cheapest immutable value Python builds."""

    index: int  # type: ignore[assignment]  # (shadows tuple.index: nothing calls that on a chunk)
    count: int  # type: ignore[assignment]  # (shadows tuple.count, likewise)
    source: Chunk
    checks: tuple[Check, ...]  # reason order
    amounts: tuple[tuple[str, float], ...]  # consumables in request order (exec_vnode order)
    exec_suffix: str  # ":ncpus=12:mem=16777216kb"
    key: tuple = ()  # what decides fit: the checks (hashable, for caches)
    match_key: tuple = ()  # what decides fit apart from amounts: the non-consumable checks

    @property
    def text(self) -> str:
        """The chunk in select syntax (made when a message needs it)."""
        return self.source.text()

    @property
    def constrained(self) -> bool:
        return any(c.consumable and c.amount > 0 for c in self.checks)


class BadValue(SelectSyntaxError):
    """A requested value of the wrong kind for the resource the hosts define
    (``ncpus=abc``, ``ncpus=-1``, ``gpu=maybe`` for a boolean).  ``chunk``
    (0-based) and ``resource`` say where, so a caller holding the select text
    can point a caret at it."""

    def __init__(self, message: str, chunk: int, resource: str) -> None:
        self.chunk = chunk
        self.resource = resource
        super().__init__(message)


_TRUE = frozenset({"true", "t", "y", "yes", "1"})
_FALSE = frozenset({"false", "f", "n", "no", "0"})


def _coerce(col: Column | None, name: str, written: object, value: object, index: int) -> object:
    """The requested value read as the hosts' kind of ``name``, as PBS reads a
    value by its resource's type: ``1``/``0``/``t``/``y``... for a boolean, a
    bare number for a string resource is that string.  Raises BadValue when the
    value cannot be of that kind; a resource no host defines keeps its value."""
    if col is None:
        return value
    if col.kind == "bool":
        if isinstance(value, bool):
            return value
        text = str(written).strip().lower() if isinstance(written, (int, str)) else ""
        if text in _TRUE or text in _FALSE:
            return text in _TRUE
        raise BadValue(f"{name}={format_value(written)}: expected true or false ({name} is a boolean on the hosts)",
                       index, name)
    if col.kind in ("num", "size"):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value
        kind, what = ("a size like 16gb", "a size") if col.kind == "size" else ("a non-negative number", "numeric")
        raise BadValue(f"{name}={format_value(written)}: expected {kind} ({name} is {what} on the hosts)", index, name)
    if isinstance(value, bool):
        return format_value(value)
    if isinstance(value, (int, float)):
        return written if isinstance(written, str) else format_value(value)
    return value


def _amount_for(col: Column | None, value: float) -> float:
    """A requested number in the column's units: a bare number for a size
    column is bytes; a size for a column of bare numbers is turned into bytes."""
    if col is not None and col.kind == "size" and not isinstance(value, Size):
        return float(math.ceil(float(value) / 1024))
    if col is not None and col.kind == "num" and isinstance(value, Size):
        return float(value) * 1024
    return float(value)


_Piece = tuple[Check, str, tuple, tuple[str, float] | None] | None
"""One requested resource compiled: its check, its exec_vnode text (a
consumable's; '' for the others), its part of the chunk's key and its
(resource, amount) (a consumable's), or None when PBS drops it.  Kept and
shared by every chunk that asks for the value (fewer objects per request)."""


_new = tuple.__new__  # (a named tuple made without its generated __new__'s extra call)

_PIECES = "compiled values"  # (the key of the piece cache in ``table.derived``)


def _piece(table: NodeTable, name: str, written: object, index: int) -> _Piece:
    """``name=written`` compiled against ``table`` (see :func:`compile_chunk`),
    to be kept per table (:func:`compile_chunk` keeps it): what a value
    compiles to depends on the table alone, so the many requests of a cycle
    that ask for the same value (``ncpus=1``) compile it once."""
    value = classify(written)
    col = table.columns.get(name)
    if not (table.checked(name) or isinstance(value, bool)):
        return None  # not on the resources line: PBS drops it from the select's resource set
    value = _coerce(col, name, written, value, index)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        amt = _amount_for(col, value)
        if isinstance(value, Size):
            shown: object = value
        elif col is not None and col.kind == "size":
            shown = Size(amt)
        else:
            shown = value
        return _new(Check, (name, amt, True, written)), f":{name}={exec_amount(shown)}", (name, "float", amt, True), (name, amt)
    return _new(Check, (name, value, False, written)), "", (name, type(value).__name__, value, False), None


def forget_compiled(table: NodeTable) -> None:
    """Drop the compiled values kept for ``table`` (a benchmark timing two
    placers on one table makes each compile every value itself)."""
    table.derived.pop(_PIECES, None)


_DEFAULT_ITEMS = tuple(DEFAULT_CHUNK.items())


def compile_chunk(table: NodeTable, chunk: Chunk, index: int) -> CompiledChunk:
    """Compile one chunk against ``table`` (see module docs for the rules).
    Raises BadValue for a value that cannot be of the hosts' kind (such a
    value is not kept: its error names the chunk)."""
    pieces = cast("dict[tuple, _Piece] | None", table.derived.get(_PIECES))
    if pieces is None:
        pieces = table.derived[_PIECES] = {}
    given = chunk.resources
    items: list[tuple[str, object]] = list(given.items())
    for k, v in _DEFAULT_ITEMS:
        if k not in given:
            items.append((k, v))
    plain: list[tuple] = []  # the non-consumables' pieces, then the consumables', in request order
    cons: list[tuple] = []
    for name, written in items:
        key = (name, type(written), written)
        piece = pieces.get(key, _UNKNOWN)
        if piece is _UNKNOWN:
            piece = _piece(table, name, written, index)
            if len(pieces) > 65536:
                pieces.clear()
            pieces[key] = piece
        if piece is not None:
            (plain if piece[3] is None else cons).append(piece)
    if plain:
        plain.reverse()  # PBS's order: non-consumables in reverse order of appearance, then consumables
        match_key = tuple([p[2] for p in plain])
        checks = tuple([p[0] for p in plain + cons])
    else:
        match_key = ()
        checks = tuple([p[0] for p in cons])
    if len(cons) == 1:
        c = cons[0]
        amounts, suffix, key = (c[3],), c[1], (*match_key, c[2])
    else:
        amounts = tuple([p[3] for p in cons])
        suffix = "".join([p[1] for p in cons])
        key = match_key + tuple([p[2] for p in cons])
    return _new(CompiledChunk, (index, chunk.count, chunk, checks, amounts, suffix, key, match_key))


_UNKNOWN = cast("_Piece", object())  # (not yet compiled: only its identity is read)


def compile_request(table: NodeTable, request: SelectRequest) -> tuple[CompiledChunk, ...]:
    return tuple(compile_chunk(table, c, i) for i, c in enumerate(request.chunks))


# --- vector tests -------------------------------------------------------------


def match_mask(table: NodeTable, check: Check, idx: np.ndarray) -> np.ndarray:
    """For a non-consumable check: which of hosts ``idx`` have the requested value."""
    col = table.columns.get(check.res)
    v = check.value
    if isinstance(v, bool):
        if col is None:
            return np.full(len(idx), not v)
        if col.kind != "bool":
            return np.zeros(len(idx), bool)
        return cast(np.ndarray, col.values)[idx] == v
    if col is None or col.kind not in ("str", "strarr"):
        return np.zeros(len(idx), bool)
    return col.equals_mask(str(v), casefold=check.res in ("host", "vnode"))[idx]


NO_LIMIT = int(np.iinfo(np.int64).max)  # (read once: an iinfo is built anew per call)


def chunks_per_host(
    table: NodeTable,
    chunk: CompiledChunk,
    idx: np.ndarray,
    avail: dict[str, np.ndarray] | None = None,
    matched: np.ndarray | None = None,
) -> np.ndarray:
    """How many copies of ``chunk`` fit on each host in ``idx`` (int64 vector).

    ``avail`` maps a consumable to amounts aligned with ``idx`` (free amounts);
    None means totals.  ``matched``: which of ``idx`` pass the chunk's
    non-consumable checks, when the caller knows (else they are tested).  A
    chunk no consumable constrains (all amounts 0 or none on the resource
    line) counts 1 per matching host: upstream's "infinite" sentinel made
    such chunks match nothing (pitfall L7).
    """
    ok = np.ones(len(idx), bool) if matched is None else matched
    if matched is None:
        for c in chunk.checks:
            if not c.consumable:
                ok &= match_mask(table, c, idx)
    few = _few_per_host(table, chunk, idx, avail) if len(idx) <= FEW_HOSTS else None
    cap = np.array(few, dtype=np.int64) if few is not None else _numpy_per_host(table, chunk, idx, avail)
    return np.where(ok, cap, 0)


def _numpy_per_host(table: NodeTable, chunk: CompiledChunk, idx: np.ndarray,
                    avail: dict[str, np.ndarray] | None) -> np.ndarray:
    """:func:`chunks_per_host`'s counts before the match, over any number of hosts."""
    cap = np.full(len(idx), NO_LIMIT, dtype=np.int64)
    constrained = False
    for c in chunk.checks:
        if not c.consumable or c.amount <= 0:
            continue
        constrained = True
        have = avail[c.res] if avail is not None and c.res in avail else table.total(c.res)[idx]
        cap = np.minimum(cap, np.floor(np.maximum(have, 0) / c.amount + 1e-9).astype(np.int64))
    return cap if constrained else np.ones(len(idx), dtype=np.int64)


FEW_HOSTS = 64
"""Up to this many hosts (a bucket set's representatives), :func:`chunks_per_host` counts in Python:
the same float operations, without a numpy call's overhead each (a test compares the two)."""


def _few_per_host(table: NodeTable, chunk: CompiledChunk, idx: np.ndarray,
                  avail: dict[str, np.ndarray] | None) -> list[int] | None:
    """:func:`chunks_per_host`'s counts of a few hosts before the match (None: a value that is not
    finite, which only numpy's rules say how to count)."""
    cap: list[int] | None = None
    for c in chunk.checks:
        if not c.consumable or c.amount <= 0:
            continue
        have = (avail[c.res] if avail is not None and c.res in avail else table.total(c.res)[idx]).tolist()
        if not all(math.isfinite(h) for h in have):
            return None
        got = [math.floor(max(h, 0.0) / c.amount + 1e-9) for h in have]  # (as np.floor(np.maximum(h, 0) / a + 1e-9))
        if any(g > NO_LIMIT for g in got):  # (past int64: numpy's rules again)
            return None
        cap = got if cap is None else [min(a, b) for a, b in zip(cap, got)]
    return [1] * len(idx) if cap is None else cap


def host_reason(
    table: NodeTable, chunk: CompiledChunk, i: int, avail: dict[str, float] | None = None
) -> tuple[str, str] | None:
    """Why one copy of ``chunk`` does not fit host ``i``: (resource, comment text), or None.

    ``avail`` gives the host's free amounts (None: totals, as the bucket path compares).
    """
    for c in chunk.checks:
        col = table.columns.get(c.res)
        if c.consumable:
            if c.amount <= 0:
                continue
            total = float(table.total(c.res)[i]) if col is not None and col.consumable else 0.0
            have = avail.get(c.res, total) if avail is not None else total
            if have + 1e-9 < c.amount:
                return c.res, _insufficient(c.res, col, c.amount, have, total, _written_size(c))
        elif not match_mask(table, c, np.asarray([i]))[0]:
            hv = col.value(i) if col is not None else (False if isinstance(c.value, bool) else None)
            shown = "" if hv is None else format_value(hv)
            detail = f"({format_value(c.value)} != {shown})"
            return c.res, INSUFFICIENT.format(res=c.res, detail=detail)
    return None


def _insufficient(res: str, col: Column | None, requested: float, available: float, total: float, size: bool) -> str:
    """PBS's ``Insufficient amount of resource: RES (R: .. A: .. T: ..)``."""
    shown = (_show(col, x, size) for x in (requested, available, total))
    return INSUFFICIENT.format(res=res, detail="(R: {} A: {} T: {})".format(*shown))


def _show(col: Column | None, amount: float, size: bool = False) -> str:
    """An amount in a comment: a size (``1gb``) when the hosts' column is one,
    or, for a resource no host defines, when the request wrote a size."""
    if (col is not None and col.kind == "size") or (col is None and size):
        return format_value(Size(amount))
    return format_value(float(amount))


def _written_size(check: Check) -> bool:
    return isinstance(check.written, str) and isinstance(classify(check.written), Size)


# --- the aggregate prefilter -------------------------------------------------


def prefilter(
    table: NodeTable,
    request: SelectRequest,
    chunks: tuple[CompiledChunk, ...],
    idx: np.ndarray,
    view: StateView,
    sums: SetSums,
) -> tuple[str, str, int | None] | None:
    """The aggregate test on the hosts ``idx`` before any node search.

    Returns None when the request may fit, else (status, text, chunk) with status
    ``"not_now"`` or ``"never"``: the test runs against free amounts, and on
    failure against totals; failing both is "never" with the totals' reason.
    ``idx`` must be a persistent array (a queue universe or a placement set):
    the sums are cached by its identity.  ``chunk`` is the index of the chunk
    that failed, or None for a failure of the request as a whole.
    """
    now = _aggregate(table, request, chunks, idx, view, sums, total=False)
    if now is None:
        return None
    ever = _aggregate(table, request, chunks, idx, view, sums, total=True)
    return ("never", *ever) if ever is not None else ("not_now", *now)


_ANY: dict[tuple, tuple[np.ndarray, bool]] = {}


def _any_match(table: NodeTable, check: Check, idx: np.ndarray) -> bool:
    key = (id(table), id(idx), check.res, type(check.value).__name__, check.value)
    hit = _ANY.get(key)
    if hit is None or hit[0] is not idx:
        if len(_ANY) > 4096:
            _ANY.clear()
        hit = _ANY[key] = (idx, bool(match_mask(table, check, idx).any()))
    return hit[1]


def _aggregate(
    table: NodeTable,
    request: SelectRequest,
    chunks: tuple[CompiledChunk, ...],
    idx: np.ndarray,
    view: StateView,
    sums: SetSums,
    *,
    total: bool,
) -> tuple[str, int | None] | None:
    tot_nodes = len(idx)
    free_nodes, pool_a = sums.free_and_avail(idx, view) if tot_nodes else (0, {})
    if total:
        if tot_nodes == 0:
            return NO_TOTAL_NODES, None
        nodect, err = tot_nodes, NO_TOTAL_NODES
    else:
        if free_nodes == 0:
            return NO_FREE_NODES, None
        nodect, err = free_nodes, NO_FREE_NODES
    if request.place.arrangement in ("scatter", "vscatter") and nodect < request.total_chunks:
        return err, None
    # job-wide consumables summed over the select
    need: dict[str, float] = {}
    for ch in chunks:
        for r, a in ch.amounts:
            need[r] = need.get(r, 0.0) + a * ch.count
    tot: dict[str, float] = {}  # (each consumable's total over the set, read once)
    for r, amount in need.items():
        t = tot[r] = sums.total(idx, r)
        a = pool_a.get(r, 0.0)
        if amount > (t if total else a) + 1e-9:
            # (the text shows a size as the request's last chunk naming ``r`` wrote it)
            size = [_written_size(c) for ch in chunks for c in ch.checks if c.consumable and c.res == r][-1]
            return _insufficient(r, table.columns.get(r), amount, a, t, size), None
    # each chunk against the set as a whole (booleans always honoured)
    for ch in chunks:
        for c in ch.checks:
            if c.consumable:
                t = tot[c.res] if c.res in tot else sums.total(idx, c.res)
                a = pool_a.get(c.res, 0.0)
                if c.amount > (t if total else a) + 1e-9:
                    return _insufficient(c.res, table.columns.get(c.res), c.amount, a, t, _written_size(c)), ch.index
            elif not _any_match(table, c, idx):
                col = table.columns.get(c.res)
                return INSUFFICIENT.format(res=c.res, detail=f"({format_value(c.value)} != {_values(col, idx)})"), ch.index
    return None


def _values(col: Column | None, idx: np.ndarray) -> str:
    """The distinct values of a resource over hosts, in node order, comma-joined."""
    if col is None:
        return ""
    seen: dict[str, None] = {}
    for i in idx[:4096].tolist():
        v = col.value(int(i))
        if v is None:
            continue
        for s in (v if isinstance(v, tuple) else (v,)):
            seen.setdefault(format_value(s), None)
    return ",".join(seen)
