"""legionrm's metrics, through Ray's metrics API (``ray.util.metrics``).

One of the Ray shells: the metric objects live here, and each event has one
function, so an actor shell records with one line.  Ray's metrics agent
exports them on each node's metrics port in Prometheus' text format (Ray
prefixes the names with ``ray_``), and Ray's dashboard charts them; ``legionrm
up`` turns both on.  Recording never raises: a metric that cannot be
recorded (no Ray, an exporter hiccup) is logged once and dropped.

Counters: ``legionrm_placements`` (instances placed, by class),
``legionrm_vetoes`` (refused reservations and starts, by code).
Gauges (set from the dashboard's view, every couple of seconds, by :class:`ViewGauges`):
``legionrm_pending_requests`` (by pool), ``legionrm_pool_entitlement`` and
``legionrm_pool_allocation`` (by pool and resource), ``legionrm_processes``
(elastic processes by user and DUCC class), ``legionrm_host_load`` (by host).
Histogram: ``legionrm_queue_wait_seconds`` (submission to running, by pool).
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Iterable

from ray.util.metrics import Counter, Gauge, Histogram

from legionrm.models import EnactResult

log = logging.getLogger(__name__)

WAIT_BOUNDARIES = [0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 300.0, 1800.0]

_lock = threading.Lock()
_metrics: dict[str, Any] = {}
_warned = False


def _make() -> dict[str, Any]:
    return {
        "placements": Counter("legionrm_placements", "instances placed by the Enactor", tag_keys=("class_name",)),
        "vetoes": Counter("legionrm_vetoes", "reservations and starts refused, by refusal code", tag_keys=("code",)),
        "pending": Gauge("legionrm_pending_requests", "requests waiting in the queue", tag_keys=("pool",)),
        "wait": Histogram("legionrm_queue_wait_seconds", "from submission to running", boundaries=WAIT_BOUNDARIES,
                          tag_keys=("pool",)),
        "entitlement": Gauge("legionrm_pool_entitlement", "a pool's entitlement", tag_keys=("pool", "resource")),
        "allocation": Gauge("legionrm_pool_allocation", "a pool's allocation", tag_keys=("pool", "resource")),
        "processes": Gauge("legionrm_processes", "elastic processes running", tag_keys=("user", "ducc_class")),
        "load": Gauge("legionrm_host_load", "a host's load (0..1)", tag_keys=("host",)),
    }


def _get(name: str) -> Any:
    """The metric ``name``, made on first use (in the process that records it)."""
    with _lock:
        if not _metrics:
            _metrics.update(_make())
        return _metrics[name]


def _safely(fn: Any) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> None:
        global _warned
        try:
            fn(*args, **kwargs)
        except Exception:  # metrics must never break the work they count
            if not _warned:
                _warned = True
                log.exception("recording a metric failed (further failures are not logged)")

    wrapper.__doc__ = fn.__doc__
    wrapper.__name__ = fn.__name__
    return wrapper


@_safely
def record_enactment(result: EnactResult) -> None:
    """An enactment: its placements (when it succeeded) and every veto on the way."""
    for code in vetoes_of(result):
        _get("vetoes").inc(1, {"code": code})
    if result.ok:
        for p in result.placements:
            _get("placements").inc(1, {"class_name": p.class_name})


def vetoes_of(result: EnactResult) -> list[str]:
    """The refusal codes of every failed placement in every attempt."""
    return [f.code for a in result.attempts for f in a.failures]


@_safely
def record_queue_wait(pool: str, seconds: float) -> None:
    _get("wait").observe(max(float(seconds), 0.0), {"pool": pool})


@_safely
def set_pending(by_pool: dict[str, int]) -> None:
    for pool, n in by_pool.items():
        _get("pending").set(n, {"pool": pool})


@_safely
def set_pools(rows: Iterable[dict[str, Any]]) -> None:
    """Pool rows as :func:`legionrm.gateway.dashboard.view.pool_rows` gives them."""
    for row in rows:
        for dim, v in row["resources"].items():
            _get("entitlement").set(v["entitlement"], {"pool": row["pool"], "resource": dim})
            _get("allocation").set(v["allocation"], {"pool": row["pool"], "resource": dim})


@_safely
def set_processes(rows: Iterable[dict[str, Any]]) -> None:
    """Share rows as :func:`legionrm.gateway.dashboard.view.share_rows` gives them."""
    for row in rows:
        _get("processes").set(row["processes"], {"user": row["user"], "ducc_class": row["class"]})


@_safely
def set_host_load(rows: Iterable[dict[str, Any]]) -> None:
    for row in rows:
        if row["kind"] == "host":
            _get("load").set(row["load"], {"host": row["name"]})


class ViewGauges:
    """Sets the gauges from each dashboard view (:func:`legionrm.gateway.dashboard.view.build_view`):
    a pool or user that went away is set to 0, and each request's queue wait is recorded once."""

    def __init__(self, waiting: tuple[str, ...]) -> None:
        self.waiting = waiting  # the request states the view lists as waiting (dashboard.view.WAITING)
        self._seen: dict[str, set[tuple[str, ...]]] = {}
        self._waited: set[str] = set()

    def record(self, view: dict[str, Any]) -> None:
        pending: dict[str, int] = {p["pool"]: 0 for p in view["pools"]}
        for r in view["pending"]:
            pending[r["pool"]] = pending.get(r["pool"], 0) + 1
        for key in self._seen.get("pending", set()) - {(p,) for p in pending}:
            pending[key[0]] = 0
        self._seen["pending"] = {(p,) for p in pending}
        set_pending(pending)
        shares = list(view["shares"])
        for user, cls in self._seen.get("shares", set()) - {(s["user"], s["class"]) for s in shares}:
            shares.append({"user": user, "class": cls, "processes": 0})
        self._seen["shares"] = {(s["user"], s["class"]) for s in shares}
        set_processes(shares)
        set_pools(view["pools"])
        set_host_load(view["hosts"])
        listed = set()
        for r in view["running"] + view["ended"]:
            listed.add(r["id"])
            if r["wait_s"] is not None and r["id"] not in self._waited:
                self._waited.add(r["id"])
                record_queue_wait(r["pool"], r["wait_s"])
        self._waited &= listed | {r["id"] for r in view["pending"] if r["state"] in self.waiting}
