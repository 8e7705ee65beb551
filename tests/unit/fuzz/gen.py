"""What the fuzz suite feeds the file loaders: a TOML writer for any
document (inline tables, so any shape can be written), small valid seed
documents for each file kind, and hypothesis strategies for the values that
broke the loaders before (huge and negative numbers, nan and inf, bools where
numbers are asked, wrong types, deep nesting, long strings)."""

from __future__ import annotations

import copy as copy_module
import datetime as dt
import json
import math
import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

# Deterministic by default, so the suite never turns red at random; set
# LEGIONRM_FUZZ_RANDOM=1 (and raise LEGIONRM_FUZZ_EXAMPLES) to explore.
EXAMPLES = int(os.environ.get("LEGIONRM_FUZZ_EXAMPLES", "150"))
FUZZ = settings(
    max_examples=EXAMPLES,
    # a guard against runaway evaluation (an exponential regex, a deep tree), not a speed target:
    # generous, so a loaded 2-core CI machine running three workers does not trip it
    deadline=dt.timedelta(seconds=10),
    derandomize=not os.environ.get("LEGIONRM_FUZZ_RANDOM"),
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


class Deep:
    """``n`` nested arrays, written as brackets (no recursion in the writer)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __repr__(self) -> str:
        return f"Deep({self.n})"


class Raw:
    """Text written as it is (a 5,000-digit number, a broken token)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"Raw({self.text[:20]!r})"


def value(v: Any) -> str:
    """``v`` as a TOML value (inline tables and arrays)."""
    if isinstance(v, Deep):
        return "[" * v.n + "]" * v.n
    if isinstance(v, Raw):
        return v.text
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (dt.datetime, dt.date)):
        return v.isoformat()
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {value(x)}" for k, x in v.items()) + "}"
    raise TypeError(type(v))


def dump(doc: dict[str, Any]) -> str:
    """A document as TOML text: one ``key = value`` line per top-level key."""
    return "".join(f"{json.dumps(str(k))} = {value(v)}\n" for k, v in doc.items())


# --- values -----------------------------------------------------------------------------

NASTY = [
    0, -1, 1, -1_000_000, 2**63, -(2**63) - 1, 10**30, 2**63 - 1, 1_000_000_000, 100_001, 10_001,
    1e308, -1e308, 1e-300, float("nan"), float("inf"), float("-inf"), -0.0, 0.5, True, False,
    "", "-5", "arm*", "x" * 11_000, "1:ncpus=99999999999999999999999999", "100000000:ncpus=1", "$cpus >",
    "NoSuchPolicy", "a:b", "os:path", "legionrm.hostobj.policies:Policy", "[[[", "\x00", "é", "/", "/a//b",
    "scatter:excl", "1:mem=" + "9" * 400 + "pb", "1:ncpus=1e999", "FAIR_SHARE", "STATIC", "sort_priority HIGH",
    dt.date(1979, 5, 27), dt.datetime(2000, 1, 1, 12, 0),
    Deep(33), Deep(40), Deep(300), Deep(3000), Raw("9" * 5000), Raw("-" + "9" * 5000), Raw("1e99999"),
    [], [1, "a"], ["arm*", 1], [[[]]], {}, {"a": 1}, {"cpu": {"limit": -1}},
]

scalars = st.one_of(
    st.sampled_from(NASTY),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.booleans(),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)


def paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path into ``doc`` (keys and list indices), the empty path first."""
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += paths(v, prefix + (i,))
    return out


def _parent(doc: Any, path: tuple) -> Any:
    for p in path[:-1]:
        doc = doc[p]
    return doc


def copy(doc: Any) -> Any:
    """A deep copy (drawn values are shared with NASTY: never mutate them in place)."""
    return copy_module.deepcopy(doc)


@st.composite
def mutated(draw: st.DrawFn, seed: dict[str, Any]) -> dict[str, Any]:
    """``seed`` after one to four mutations: a value replaced, a key dropped or
    added, a table repeated, a key's value wrapped in a list."""
    doc = copy(seed)
    for _ in range(draw(st.integers(1, 4))):
        where = draw(st.sampled_from(paths(doc)))
        op = draw(st.sampled_from(["replace", "replace", "replace", "drop", "add", "repeat", "wrap"]))
        if not where:
            if op in ("add", "replace"):
                doc[draw(st.text(max_size=8))] = copy(draw(values))
            continue
        parent, key = _parent(doc, where), where[-1]
        if op == "replace":
            parent[key] = copy(draw(values))
        elif op == "drop":
            del parent[key]
        elif op == "add" and isinstance(parent[key], dict):
            parent[key][draw(st.sampled_from(["name", "count", "cpus", "x", "", "policy"]))] = copy(draw(values))
        elif op == "repeat" and isinstance(parent[key], list) and parent[key]:
            parent[key].append(copy(parent[key][-1]))
        elif op == "wrap":
            parent[key] = [parent[key]]
    return doc


# --- seed documents: small valid files of each kind --------------------------------------

CLUSTER = {
    "collection": {"heartbeat_interval_s": 5.0, "stale_after": 3},
    "host": [
        {"name": "n", "count": 2, "nodepool": "batch", "attributes": {"cpus": 8, "memory_gb": 32, "gpus": 0, "arch": "x86_64"},
         "policy": "LoadCeiling", "policy_args": {"max_load": 0.5}},
        {"name": "g", "attributes": {"cpus": 16, "memory_gb": 64, "gpus": 2}, "access": {"allow_users": ["alice"]}},
    ],
    "vault": [{"name": "v", "serves": ["n*"], "attributes": {"storage_gb": 100}}],
    "class": [{"name": "Worker", "host_list": ["n1"], "max_instances": 4, "implementation": "legionrm.hostobj.work:Command"}],
    "fairshare": {"interval_s": 10.0, "rm": {"quantum_gb": 1.0}, "class": [{"name": "normal", "policy": "FAIR_SHARE", "default": True}]},
    "pool": [{"path": "/a", "cpu": {"reservation": 4, "limit": 8}}],
}

REQUEST = {
    "request_id": "r1",
    "pool": "/",
    "identity": {"user": "alice", "groups": ["g"]},
    "object": [{"class_name": "Worker", "count": 2, "cpus": 2, "memory_gb": 4, "placement": "scatter",
                "constraint": "$cpus >= 2", "args": {"n": 1}}],
}

SIMULATE = {
    "rm": {"quantum_gb": 1.0, "initialization_cap": 2},
    "class": [{"name": "normal", "policy": "FAIR_SHARE", "default": True}],
    "machine": [{"name": "m", "count": 2, "memory_gb": 8}],
    "job": [{"id": "j1", "user": "u", "memory_gb": 2, "work_items": 10, "threads": 1, "time_per_item_ms": 1000}],
    "event": [{"cycle": 3, "kind": "complete", "job": "j1"}],
}

PLACE = {
    "scheduler": {"resources": ["ncpus", "mem", "color"], "node_sort_key": "sort_priority HIGH", "now": 0},
    "node": [{"name": "n", "count": 2, "priority": 1, "resources": {"ncpus": 8, "mem": "16gb", "color": "red"}}],
    "busy": [{"nodes": ["n1"], "start": 0, "end": 100}],
    "job": [{"id": "j", "select": "2:ncpus=2:mem=1gb", "place": "scatter", "walltime": 60}],
}

POOLS = {
    "capacity": {"cpu": 16, "memory": 1024, "disk": 0, "gpu": 0},
    "pool": [{"path": "/a", "cpu": {"reservation": 4, "limit": 8}, "memory": {"reservation": 100, "limit": 500}}],
    "demand": [{"pool": "/a", "cpu": 2}],
    "gang": [{"id": "g", "pool": "/a", "tasks": [{"cpu": 1, "memory": 10, "priority": 1}]}],
}

SIZE_KEYS: dict[str, list[tuple]] = {
    "cluster": [("host", 0, "count"), ("host", 0, "attributes", "cpus"), ("host", 1, "attributes", "memory_gb"),
                ("host", 1, "attributes", "gpus"), ("vault", 0, "attributes", "storage_gb"),
                ("class", 0, "max_instances"), ("collection", "stale_after"), ("fairshare", "interval_s"),
                ("pool", 0, "cpu", "reservation")],
    "request": [("object", 0, "count"), ("object", 0, "cpus"), ("object", 0, "memory_gb")],
    "simulate": [("machine", 0, "count"), ("machine", 0, "memory_gb"), ("job", 0, "memory_gb"),
                 ("job", 0, "threads"), ("job", 0, "work_items"), ("event", 0, "cycle"), ("rm", "quantum_gb")],
    "place": [("node", 0, "count"), ("node", 0, "resources", "ncpus"), ("job", 0, "walltime"), ("busy", 0, "end")],
    "pools": [("capacity", "cpu"), ("demand", 0, "cpu"), ("gang", 0, "tasks", 0, "cpu"), ("gang", 0, "tasks", 0, "memory"),
              ("pool", 0, "cpu", "limit")],
}
"""Where each seed asks for a size, count or amount: a bad number there must be refused."""

BAD_NUMBERS = [-1_000_000, float("nan"), float("inf"), float("-inf"), True, 10**30, -(2**63) - 1, Raw("9" * 5000),
               "5", [1]]
