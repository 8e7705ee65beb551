"""A live change of the site policy (:meth:`SitePolicy.reload`): the new QoS, limits, shares
and weights hold at once; a change a request still needs (its QoS gone) is refused and
changes nothing; a check changes nothing either way."""

from __future__ import annotations

import pytest

from legionrm.config import parse_cluster
from legionrm.models import Identity, ObjectRequest, SchedulingRequest
from legionrm.scheduler.priority import SitePolicy, site_settings, site_spec
from legionrm.scheduler.requests import Entry

BASE = {"host": [{"name": "h0", "attributes": {"cpus": 8, "memory_gb": 16}}], "class": [{"name": "W"}],
        "qos": [{"name": "normal", "priority": 10, "default": True}, {"name": "debug", "priority": 50}],
        "fairshare": {"half_life_s": 100.0}}


def spec(**change):
    return parse_cluster({**BASE, **change})


def entry(rid: str, qos: str | None, state: str = "pending", cpus: float = 1.0, user: str = "ann") -> Entry:
    e = Entry(SchedulingRequest(request_id=rid, identity=Identity(user=user), qos=qos,
                                objects=(ObjectRequest(class_name="W", count=1, cpus=cpus, memory_gb=1),)), submitted=1.0)
    e.state = state  # type: ignore[assignment]
    return e


def site() -> SitePolicy:
    return SitePolicy(site_settings(spec()), None, lambda: 100.0, 8.0)


def snapshot(s: SitePolicy) -> tuple:
    return s.settings, s.formula, s.tree.rows({}, ["ann"])


@pytest.mark.parametrize("change, check", [
    ({"qos": [{"name": "normal", "default": True}, {"name": "debug", "priority": 50, "max_running_cpus_per_user": 1}]},
     lambda s, es: s.limits(es).blocked(s.ask(es[1])) is not None),
    ({"qos": [*BASE["qos"], {"name": "gold", "priority": 900}]}, lambda s, es: "gold" in s.settings.qos),
    ({"fairshare": {"half_life_s": 100.0, "weights": {"qos": 7}}}, lambda s, es: s.formula.weights.qos == 7),
    ({"fairshare": {"half_life_s": 5.0}}, lambda s, es: s.settings.half_life_s == 5.0),
    ({"fairshare": {"half_life_s": 100.0, "group": [{"name": "g", "shares": 3, "users": {"ann": 1}}]}},
     lambda s, es: [g.name for g in s.settings.groups] == ["g"]),
    ({"class": [{"name": "W", "qos": "debug"}]}, lambda s, es: s.qos_of(es[1].request) == "debug"),
], ids=["qos-limit", "qos-added", "weights", "half-life", "shares", "class-default"])
def test_a_reload_takes_effect_at_once(change, check) -> None:
    s = site()
    es = [entry("r0", "debug", "running"), entry("r1", "debug" if "qos" in change else None)]
    assert not check(s, es)
    assert s.reload(site_spec(spec(**change)), es, check=True) is None and not check(s, es)  # a check changes nothing
    assert s.reload(site_spec(spec(**change)), es) is None
    assert check(s, es)


def test_the_total_cpus_of_the_formula_are_kept() -> None:
    s = site()
    assert s.reload(site_spec(spec(fairshare={"half_life_s": 1.0, "weights": {"size": 3}})), []) is None
    assert s.formula.total_cpus == 8.0 and s.formula.weights.size == 3


@pytest.mark.parametrize("state", ["pending", "running", "admitted"])
def test_a_qos_a_live_request_is_in_cannot_go(state) -> None:
    s = site()
    es = [entry("r0", None, "completed"), entry("r7", "debug", state)]
    before = snapshot(s)
    for check in (True, False):
        why = s.reload(site_spec(spec(qos=[{"name": "normal", "default": True}])), es, check=check)
        assert why is not None and why.code == "reload.refused" and "r7" in why.reason and "'debug'" in why.reason
        assert snapshot(s) == before


def test_a_finished_request_does_not_hold_its_qos() -> None:
    s = site()
    assert s.reload(site_spec(spec(qos=[{"name": "normal", "default": True}])), [entry("r0", "debug", "completed")]) is None
    assert set(s.settings.qos) == {"normal"}


def test_settings_that_do_not_validate_are_refused() -> None:
    s = site()
    bad = site_spec(spec()).model_copy(update={"qos": ({"name": "x", "priority": -1},)})
    why = s.reload(bad, [])
    assert why is not None and why.code == "reload.refused" and "priority" in why.reason


LIMITED = [{"name": "normal", "default": True}, {"name": "debug", "priority": 50, "max_running_cpus_per_user": 1}]


def test_unlimited_as_the_order_kept_it_is_the_fresh_answer_and_not_across_new_settings() -> None:
    s = site()
    es = [entry("r0", None), entry("r1", "debug"), entry("r2", "debug")]
    es[2].request = es[2].request.model_copy(update={"hold": "user"})
    fresh = [True, True, False]  # (held: a hold keeps it waiting)
    assert [s.unlimited(e.request) for e in es] == fresh  # (before any order: worked out)
    s.order(es)
    assert [s.unlimited(e.request) for e in es] == fresh  # (read from the order's rows)
    # new settings not yet in the order's table (as between a reload's two steps): worked out afresh
    s.settings = site_settings(spec(qos=LIMITED))
    assert [s.unlimited(e.request) for e in es] == [True, False, False]
    s = site()
    s.order(es)
    assert s.reload(site_spec(spec(qos=LIMITED)), es) is None
    assert [s.unlimited(e.request) for e in es] == [True, False, False]
    s.order(es)
    assert [s.unlimited(e.request) for e in es] == [True, False, False]
