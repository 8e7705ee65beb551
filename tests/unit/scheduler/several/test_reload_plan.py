"""The reload planner: what it applies live (pools, schedulers' nodepools, the site policy,
owners' policies and access lists), what it refuses in one line, and that a refused plan
carries nothing to apply."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.config import parse_cluster
from legionrm.models import BoundNode, OwnerPolicy
from legionrm.scheduler.several import Roster, plan_reload
from legionrm.scheduler.several.reload import LIVE_PARTS
from legionrm.tomlio import loads_toml

BASE = """
[[host]]
name = "h1"
nodepool = "p1"
attributes = { cpus = 4, memory_gb = 8 }

[[host]]
name = "h2"
nodepool = "p1"
policy = "LoadCeiling"
policy_args = { max_load = 0.5 }
attributes = { cpus = 4, memory_gb = 8 }

[[vault]]
name = "v1"
attributes = { storage_gb = 100 }

[[class]]
name = "Worker"

[[qos]]
name = "normal"
default = true

[[qos]]
name = "debug"
priority = 5
max_running_cpus_per_user = 8

[[ray_node]]
hostname = "gpu-*"
nodepool = "gpu"

[fairshare]
interval_s = 10.0
half_life_s = 3600
"""


def spec(text: str = BASE):
    return parse_cluster(loads_toml(text), file="c.toml")


def plan(new_text: str, nodes=()):
    running = spec()
    return plan_reload(Roster.of(running), (), running, spec(new_text), nodes)


NODE = BoundNode(host="ray-1a2b3c4d", node_id="1a2b3c4d" * 7, hostname="gpu-7")


@pytest.mark.parametrize("new, changes", [
    (BASE, []),
    (BASE.replace("max_running_cpus_per_user = 8", "max_running_cpus_per_user = 2"), ["site policy (qos, fair share)"]),
    (BASE + '\n[[qos]]\nname = "gold"\npriority = 9\n', ["site policy (qos, fair share)"]),
    (BASE.replace('name = "Worker"', 'name = "Worker"\nqos = "debug"'), ["site policy (qos, fair share)"]),
    (BASE.replace("half_life_s = 3600", "half_life_s = 60"), ["site policy (qos, fair share)"]),
    (BASE + "\n[fairshare.weights]\nqos = 5\n", ["site policy (qos, fair share)"]),
    (BASE.replace("max_load = 0.5", "max_load = 0.9"), ["host h2 policy and access"]),
    (BASE.replace('nodepool = "p1"\nattributes', 'nodepool = "p1"\naccess = { deny_users = ["ann"] }\nattributes', 1),
     ["host h1 policy and access"]),
    (BASE.replace('storage_gb = 100 }', 'storage_gb = 100 }\naccess = { allow_users = ["bob"] }'),
     ["vault v1 policy and access"]),
    (BASE.replace('nodepool = "gpu"', 'nodepool = "gpu"\npolicy = "DenyUsers"\npolicy_args = { names = ["ann"] }'),
     ["host ray-1a2b3c4d policy and access", "ray_node rules (for the nodes that join)"]),
], ids=["nothing", "qos-limit", "qos-added", "class-default-qos", "half-life", "weights", "policy-args",
        "host-access", "vault-access", "ray-node-rule"])
def test_what_reload_applies_live(new, changes) -> None:
    got = plan(new, [NODE])
    assert got.refused is None and got.changes == changes


def test_a_changed_owner_carries_what_undoes_it() -> None:
    got = plan(BASE.replace("max_load = 0.5", "max_load = 0.9"))
    assert got.owners == (OwnerPolicy(resource="h2", policy="LoadCeiling", policy_args={"max_load": 0.9}),)
    assert got.owners_before == (OwnerPolicy(resource="h2", policy="LoadCeiling", policy_args={"max_load": 0.5}),)


def test_the_site_policy_carries_only_the_sites_keys_of_fairshare() -> None:
    got = plan(BASE.replace("half_life_s = 3600", "half_life_s = 60"))
    assert got.site is not None and got.site.fairshare == {"half_life_s": 60}
    assert got.site_before is not None and got.site_before.fairshare == {"half_life_s": 3600}


@pytest.mark.parametrize("new, words", [
    (BASE.replace('name = "h2"', 'name = "h3"'), ["hosts would change from h1, h2 to h1, h3", "down"]),
    (BASE.replace("cpus = 4, memory_gb = 8 }", "cpus = 6, memory_gb = 8 }", 1), ["host h1's attributes changed"]),
    (BASE.replace('nodepool = "p1"', 'nodepool = "p2"', 1), ["host h1's nodepool changed"]),
    (BASE + '\n[[vault]]\nname = "v2"\n', ["vaults would change"]),
    (BASE.replace('name = "Worker"', 'name = "Worker"\nmax_instances = 3'), ["class Worker's max_instances"]),
    (BASE.replace("interval_s = 10.0", "interval_s = 5.0"), ["fairshare.interval_s changed"]),
    (BASE + '\n[queue]\npolicy = "fcfs"\n', ["queue changed"]),
    (BASE.replace('nodepool = "gpu"', 'nodepool = "gpu2"'), ["ray_node rule #1's nodepool changed"]),
    (BASE + '\n[[scheduler]]\nname = "a"\n\n[[scheduler]]\nname = "b"\n', ["schedulers would change"]),
], ids=["host-renamed", "host-attributes", "host-nodepool", "vault-added", "class-limit", "elastic-interval",
        "queue", "ray-node-nodepool", "schedulers-added"])
def test_what_cannot_be_applied_live_is_refused_in_one_line(new, words) -> None:
    got = plan(new)
    assert got.refused is not None and "\n" not in got.refused
    assert all(w in got.refused for w in words), got.refused
    assert not (got.pools or got.serves or got.site or got.owners)


@pytest.mark.parametrize("policy, args, words", [
    ("nowhere.at_all:Policy", {}, ["h2", "cannot import module 'nowhere.at_all'"]),
    ("LoadCeiling", {"ceiling": 2}, ["h2", "bad policy_args"]),
    ("LoadCeiling", {"max_load": -1}, ["h2", "max_load must be >= 0"]),
    ("legionrm.hostobj:HostObject", {}, ["h2", "owner's subclass", "down"]),
], ids=["does-not-import", "bad-argument", "bad-value", "owner-subclass"])
def test_a_policy_that_does_not_build_is_refused_by_the_plan(policy, args, words) -> None:
    running = spec()
    hosts = tuple(h.model_copy(update={"policy": policy, "policy_args": args}) if h.name == "h2" else h
                  for h in running.hosts)  # (not through parse_cluster, which would refuse it first)
    got = plan_reload(Roster.of(running), (), running, running.model_copy(update={"hosts": hosts}))
    assert got.refused is not None and all(w in got.refused for w in words), got.refused


def test_bad_site_settings_are_refused_by_the_plan() -> None:
    running = spec()
    new = running.model_copy(update={"qos": ({"name": "a", "default": True}, {"name": "b", "default": True})})
    got = plan_reload(Roster.of(running), (), running, new)
    assert got.refused is not None and "more than one QoS is marked default" in got.refused


def test_without_the_running_file_nothing_can_be_compared() -> None:
    got = plan_reload(Roster.of(spec()), (), None, spec())
    assert got.refused is not None and "cannot be read" in got.refused


def test_live_parts_name_only_parts_of_a_cluster_file() -> None:
    from legionrm.models import ClusterSpec

    assert set(LIVE_PARTS) <= set(ClusterSpec.model_fields)


EDITS = {
    "host-attr": lambda t: t.replace("cpus = 4, memory_gb = 8 }", "cpus = 5, memory_gb = 8 }", 1),
    "qos-limit": lambda t: t.replace("max_running_cpus_per_user = 8", "max_running_cpus_per_user = 1"),
    "policy": lambda t: t.replace("max_load = 0.5", "max_load = 0.7"),
    "queue": lambda t: t + '\n[queue]\norder = "submit"\n',
    "runner": lambda t: t + '\n[runner]\nrun_as = "service"\n',
    "elastic": lambda t: t.replace("interval_s = 10.0", "interval_s = 20.0"),
    "access": lambda t: t.replace('name = "v1"', 'name = "v1"\naccess = { deny_users = ["x"] }'),
}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(sorted(EDITS)), unique=True, min_size=1))
def test_a_refused_plan_carries_nothing_to_apply(edits) -> None:
    """Whatever mix of edits: either every one is applied live, or the plan refuses and holds no change."""
    text = BASE
    for e in edits:
        text = EDITS[e](text)
    got = plan(text)
    live = {"qos-limit", "policy", "access"}
    if set(edits) <= live:
        assert got.refused is None and got.changes
    else:
        assert got.refused is not None and got.changes == [] and not got.rules
