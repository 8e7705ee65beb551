"""Scheduling requests written as TOML, for ``legionrm submit REQUEST.toml``.

The file is a :class:`~legionrm.models.SchedulingRequest` with one
``[[object]]`` table per object request::

    request_id = "nightly-1"          # optional: generated when absent
    pool = "/research"                # optional: the resource pool, default "/"
    activate = []                     # optional: existing objects to activate
    start_in = 3600                   # optional: start in an hour (or start = 2026-11-24T09:00:00Z,
                                      # or seconds since the epoch): an advance reservation
    walltime_s = 1800                 # optional: every object's walltime unless it gives its own
    qos = "normal"                    # optional: a [[qos]] of the cluster file (default: the class's)
    hold = true                       # optional: submit held; `legionrm release ID` lets it go
    after_ok = ["prep-1"]             # optional: start once these requests completed (after_any:
                                      # once they ended; after_not_ok: once they ended otherwise)
    begin_at = 2026-11-24T09:00:00Z   # optional: not before then (or seconds since the epoch)
    array = "0-99%10"                 # optional: 100 tasks ID_0 .. ID_99, at most 10 at once
    requeue = true                    # optional: back to the queue if its host is lost
    on_preempt = "requeue"            # optional: if preempted (a preemptable QoS), requeue (default) or
                                      # "cancel" (it ends preempted)
    # priority = 100                  # administrators only (as an object's priority or weight):
                                      # anyone else's request that sets one is refused (request.priority)
    scheduler = "gpu"                 # optional: the scheduler to place it (default: its class's, else the first)

    [identity]                        # optional through the gateway: the signer is the user
    user = "alice"
    groups = ["genomics"]

    [[object]]
    class_name = "Worker"
    count = 2
    cpus = 12
    memory_gb = 8
    placement = "scatter"             # pack | scatter | vscatter | free
    constraint = '$gpus == 0 and $site == "uva"'
    # gpus = 1                        # optional: GPUs per instance (Ray's num_gpus; the work sees CUDA_VISIBLE_DEVICES)
    # resources = { tpu = 1 }         # optional: Ray custom resources per instance (MIL sees $tpu, $free_tpu)

    [[object]]
    class_name = "Reducer"
    name = "reduce"                   # optional: what `after` calls it (default: its class_name)
    after = ["Worker"]                # optional: start once those objects of this request run (work
                                      # that ends: once it ended well); a cycle or an unknown name is
                                      # refused at submit (request.after)

Every problem is a :class:`ConfigError` naming the table (``object[1]``) and
the key; a MIL constraint that does not parse names its position.
"""

from __future__ import annotations

import datetime as dt
import math
import time
import uuid
from pathlib import Path
from typing import Any

from legionrm.errors import ConfigError, MILError
from legionrm.mil import compile_query
from legionrm.models import Identity, ObjectRequest, SchedulingRequest
from legionrm.models.arrays import parse_array
from legionrm.models.schedules import MAX_AHEAD_S, MAX_DEPENDS, MAX_INSTANCES, MAX_OBJECTS, start_problem
from legionrm.tomlio import (
    kind_amounts,
    MAX_INT,
    MAX_TEXT,
    check_keys,
    expect,
    load_toml,
    model,
    require,
    table_count,
    tables,
)

TOP_KEYS = ("request_id", "pool", "activate", "identity", "object", "wait", "start", "start_in", "walltime_s", "qos",
            "priority", "hold", "scheduler", "after_ok", "after_any", "after_not_ok", "begin_at", "array", "requeue",
            "on_preempt")
NUMBERS = {"count": int, "cpus": float, "memory_gb": float, "gpus": int, "storage_gb": float, "walltime_s": float,
           "priority": int, "weight": float}
"""The numeric keys of an ``[[object]]`` table (a boolean is not a number; nan and inf are refused)."""
_TOP_KEYS, _IDENTITY_KEYS, _OBJECT_KEYS = (frozenset(TOP_KEYS), frozenset(Identity.model_fields),
                                         frozenset(ObjectRequest.model_fields))
"""The keys each table may have, built once (a submit through the gateway checks them every call)."""
STRINGS = ("class_name", "constraint", "vault_constraint", "placement", "ducc_class", "name")
_TYPED: dict[str, type] = {**NUMBERS, **{key: str for key in STRINGS}}
"""Each typed key of an ``[[object]]`` table, its type: the numbers first, then the strings (the order checked)."""
_WAITS = frozenset(("requeue", "after_ok", "after_any", "after_not_ok", "begin_at", "array"))
"""What :func:`_waits` reads."""
_PLAIN = (("pool", str), ("wait", bool), ("qos", str), ("priority", int), ("hold", bool), ("scheduler", str))
"""The top-level keys read as the file gives them, in the order they are checked (``hold`` then
becomes the user's hold)."""


def parse_request(doc: dict[str, Any], *, file: str = "<memory>", now: float | None = None,
                  user: str | None = None) -> SchedulingRequest:
    """A validated request from a parsed TOML document.  Raises ConfigError.

    ``start`` (a date-time with its zone, or seconds since the epoch) or
    ``start_in`` (seconds from ``now``, default the wall clock) asks for an
    advance reservation; it must not be in the past (beyond a minute) nor more
    than a year ahead, and needs a walltime.  At most ``MAX_OBJECTS`` ``[[object]]`` tables, ``MAX_INSTANCES`` instances
    in all, and ``10 * MAX_OBJECTS`` objects to activate."""
    check_keys(doc, _TOP_KEYS, file=file, where="")
    if "identity" not in doc and user is not None:  # the caller's (the gateway's proven user), when the file names none
        doc = {**doc, "identity": {"user": user}}
    ident = require(doc, "identity", dict, file=file, where="")
    check_keys(ident, _IDENTITY_KEYS, file=file, where="identity")
    identity = model(Identity, ident, file=file, where="identity")
    objects = []
    instances = 0
    # (an absent key is skipped, not asked for its default: the gateway parses every submit, and a
    # request names a few of the keys; the checks run in the same order, so the first error is the same)
    for i, t in enumerate(table_count(tables(doc, "object", file), "object", file=file, limit=MAX_OBJECTS)):
        where = f"object[{i}]"
        check_keys(t, _OBJECT_KEYS, file=file, where=where)
        for key, typ in _TYPED.items():
            if key in t:
                expect(t, key, typ, None, file=file, where=where)
        if "args" in t:
            _args(t, file=file, where=where)
        if "resources" in t:
            kind_amounts(t, file=file, where=where)
        if "after" in t and not all(isinstance(a, str) for a in expect(t, "after", list, [], file=file, where=where)):
            raise ConfigError("must be a list of object names", file=file, table=where, key="after")
        if "env" in t:
            for key, v in expect(t, "env", dict, {}, file=file, where=where).items():
                if not isinstance(v, str):
                    raise ConfigError("must be a string", file=file, table=f"{where}.env", key=str(key))
        obj = model(ObjectRequest, t, file=file, where=where)
        instances += obj.count
        if instances > MAX_INSTANCES:
            raise ConfigError(f"the request asks for more than {MAX_INSTANCES} instances in all", file=file,
                              table=where, key="count")
        for key in ("constraint", "vault_constraint", "rank"):
            if getattr(obj, key) is None:
                continue
            try:
                compile_query(getattr(obj, key))
            except MILError as exc:
                raise ConfigError(str(exc), file=file, table=where, key=key) from None
        objects.append(obj)
    activate = _opt(doc, "activate", list, [], file)
    if len(activate) > 10 * MAX_OBJECTS or not all(isinstance(a, str) for a in activate):
        raise ConfigError(f"must be a list of at most {10 * MAX_OBJECTS} object names", file=file, key="activate")
    if not objects and not activate:
        raise ConfigError("the request asks for nothing: add an [[object]] table or an activate list", file=file)
    rid = _opt(doc, "request_id", str, None, file) or f"req-{uuid.uuid4().hex[:12]}"
    walltime = _opt(doc, "walltime_s", float, None, file)
    start = _start(doc, time.time() if now is None else now, file=file) if "start" in doc or "start_in" in doc else None
    if start is not None and walltime is None and any(o.walltime_s is None for o in objects):
        raise ConfigError("a request with a start needs a walltime: give walltime_s here or in every [[object]]",
                          file=file, key="walltime_s")
    # only what the request gives goes to the model (its defaults are what an absent key reads as; the
    # model validates fewer fields: a submit through the gateway parses every request), in the same order
    values: dict[str, Any] = {"request_id": rid, "identity": identity, "objects": tuple(objects)}
    if activate:
        values["activate"] = tuple(activate)
    if start is not None:
        values["start"] = start
    if walltime is not None:
        values["walltime_s"] = walltime
    for key, typ in _PLAIN:
        if key in doc:
            values[key] = expect(doc, key, typ, None, file=file, where="")
    if values.pop("hold", False):  # (held: the user's hold; not held: the model's default)
        values["hold"] = "user"
    if _WAITS.intersection(doc):
        values.update(_waits(doc, file=file))
    if "on_preempt" in doc:
        values["on_preempt"] = _choice(doc, "on_preempt", ("requeue", "cancel"), file=file)
    return model(SchedulingRequest, values, file=file, where="")


def _opt(doc: dict[str, Any], key: str, typ: type, default: Any, file: str) -> Any:
    """A top-level key as :func:`~legionrm.tomlio.expect` reads it (``default`` when absent, without the call)."""
    return expect(doc, key, typ, None, file=file, where="") if key in doc else default


def _waits(doc: dict[str, Any], *, file: str) -> dict[str, Any]:
    """What a request waits for: its dependencies (an id or a list of ids each), ``begin_at``
    (a date-time with its zone, ISO 8601 text, or seconds since the epoch), ``array``, ``requeue``."""
    out: dict[str, Any] = {"requeue": expect(doc, "requeue", bool, False, file=file, where="")}
    for kind in ("after_ok", "after_any", "after_not_ok"):
        ids = expect(doc, kind, (list, str), [], file=file, where="")
        ids = [ids] if isinstance(ids, str) else ids
        if not all(isinstance(i, str) and i for i in ids) or len(ids) > MAX_DEPENDS:
            raise ConfigError(f"must be a request id or a list of at most {MAX_DEPENDS} of them", file=file, key=kind)
        out[kind] = tuple(ids)
    begin = expect(doc, "begin_at", (float, dt.datetime, str), None, file=file, where="")
    if isinstance(begin, str):
        try:
            begin = dt.datetime.fromisoformat(begin)
        except ValueError:
            raise ConfigError(f"{begin!r} is not an ISO 8601 time (2026-11-24T09:00:00Z) nor seconds since the epoch",
                              file=file, key="begin_at") from None
    if isinstance(begin, dt.datetime):
        if begin.tzinfo is None:
            raise ConfigError("a date-time needs its time zone (e.g. 2026-11-24T09:00:00Z)", file=file, key="begin_at")
        begin = begin.timestamp()
    if begin is not None and begin <= 0:
        raise ConfigError("must be a time after 1970", file=file, key="begin_at")
    out["begin_at"] = begin
    array = expect(doc, "array", str, None, file=file, where="")
    if array is not None:
        try:
            parse_array(array)
        except ValueError as exc:
            raise ConfigError(str(exc), file=file, key="array") from None
    out["array"] = array
    return out


def _choice(doc: dict[str, Any], key: str, choices: tuple[str, ...], *, file: str) -> str | None:
    """``doc[key]``, one of ``choices`` (None when absent)."""
    value = expect(doc, key, str, None, file=file, where="")
    if value is not None and value not in choices:
        raise ConfigError(f"must be one of {', '.join(choices)}", file=file, key=key)
    return value


def _start(doc: dict[str, Any], now: float, *, file: str) -> float | None:
    """The absolute start time ``start`` or ``start_in`` asks for (None: now), checked."""
    if "start" in doc and "start_in" in doc:
        raise ConfigError("give start or start_in, not both", file=file, key="start_in")
    if "start_in" in doc:
        key, start_in = "start_in", expect(doc, "start_in", float, None, file=file, where="")
        if not 0 <= start_in <= MAX_AHEAD_S:
            raise ConfigError(f"must be 0 to {MAX_AHEAD_S:g} seconds", file=file, key="start_in")
        start = now + start_in
    elif "start" in doc:
        key, value = "start", expect(doc, "start", (float, dt.datetime), None, file=file, where="")
        if isinstance(value, dt.datetime):
            if value.tzinfo is None:
                raise ConfigError("a date-time needs its time zone (e.g. 2026-11-24T09:00:00Z)", file=file, key="start")
            value = value.timestamp()
        start = float(value)
    else:
        return None
    why = start_problem(start, now)
    if why is not None:
        raise ConfigError(why, file=file, key=key)
    return start


def _args(t: dict[str, Any], *, file: str, where: str) -> None:
    """An object's ``args``: a table of bool, int, float or string, numbers finite and 64-bit."""
    args = expect(t, "args", dict, {}, file=file, where=where)
    for key, v in args.items():
        bad = (not isinstance(v, (bool, int, float, str))
               or (isinstance(v, float) and not math.isfinite(v))
               or (isinstance(v, int) and abs(v) > MAX_INT)
               or (isinstance(v, str) and len(v) > MAX_TEXT))
        if bad:
            raise ConfigError("must be a bool, a 64-bit int, a finite float or a short string", file=file,
                              table=f"{where}.args", key=str(key))


def load_request(path: str | Path, user: str | None = None) -> SchedulingRequest:
    """Read and validate a request file (``user``: the identity when it names none).  Raises ConfigError."""
    return parse_request(load_toml(path), file=str(path), user=user)
