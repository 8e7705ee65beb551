"""The gateway's routes over an in-process system, called through the Python client."""

from __future__ import annotations

import httpx
import pytest

from legionrm.client.errors import (
    AuthenticationError,
    BadRequestError,
    ForbiddenError,
    GatewayError,
    LegionError,
    NotFoundError,
    RateLimitedError,
    TooLargeError,
)
from legionrm.gateway.signatures import RateLimit
from legionrm.models import RequestInfo
from legionrm.models.api import SubmitResult

from .conftest import ADMIN, DASH_KEY, WORKER


def test_submit_list_show_cancel(gateway) -> None:
    ann = gateway.client("ann")
    r = ann.submit(WORKER)
    assert r.ok and r.id.startswith("req-")
    assert [i.id for i in ann.list()] == [r.id]
    info = ann.show(r.id)
    assert isinstance(info, RequestInfo) and info.user == "ann" and info.state == "running"
    assert ann.cancel(r.id).state == "cancelled"
    assert ann.wait(r.id, timeout=5).state == "cancelled"
    events = ann.events(r.id)
    assert events and events[-1].status == "cancelled" and ann.events(r.id, events[-1].seq) == []


def test_toml_text_set_overrides_and_a_chosen_id(gateway) -> None:
    text = '[[object]]\nclass_name = "Worker"\ncount = 1\ncpus = 1\n'
    r = gateway.client("ann").submit(text, set={"object.0.count": "2"}, id="mine-1")
    assert r.id == "mine-1" and gateway.client("ann").show("mine-1").count == 2


def test_identity_is_the_signer(gateway) -> None:
    ann = gateway.client("ann")
    r = ann.submit({**WORKER, "identity": {"user": "ann", "groups": ["made-up"]}})
    assert ann.show(r.id).user == "ann"
    with pytest.raises(ForbiddenError) as e:
        ann.submit({**WORKER, "identity": {"user": "bob"}})
    assert e.value.code == "auth.identity"


def test_a_user_sees_and_cancels_only_their_own(gateway) -> None:
    rid = gateway.client("ann").submit(WORKER).id
    bob = gateway.client("bob")
    assert bob.list() == []
    for call in (bob.show, bob.cancel, bob.logs):
        with pytest.raises(ForbiddenError) as e:
            call(rid)
        assert e.value.code == "auth.not_owner"
    result = bob.cancel_many([rid])
    assert not result.cancelled and result.refused[rid].code == "auth.not_owner"
    assert [i.id for i in gateway.client(ADMIN).list()] == [rid]  # an administrator sees all


def test_as_works_for_admins_and_is_refused_for_others(gateway) -> None:
    rid = gateway.client("ann").submit(WORKER).id
    admin_as_ann = gateway.client(ADMIN, as_user="ann")
    assert admin_as_ann.whoami().acting_as == "ann"
    assert admin_as_ann.submit(WORKER).ok and {i.user for i in admin_as_ann.list()} == {"ann"}
    gateway.credentials("bob")
    with pytest.raises(ForbiddenError) as e:
        gateway.client("bob", as_user="ann").show(rid)
    assert e.value.code == "auth.forbidden"


def test_unknown_request_and_bad_bodies(gateway) -> None:
    ann = gateway.client("ann")
    with pytest.raises(NotFoundError):
        ann.show("nope")
    with pytest.raises(BadRequestError):
        ann.submit({"object": [{"class_name": "Worker", "count": "many"}]})
    with pytest.raises(BadRequestError) as e:
        ann.list(state="sleeping")
    assert e.value.code == "request.invalid"


def test_logs_are_their_owners(gateway) -> None:
    """A request's logs are its owner's: for work that runs no command the owner hears so in one line;
    another user is refused before anything is read."""
    ann = gateway.client("ann")
    rid = ann.submit(WORKER).id
    with pytest.raises(BadRequestError) as own:
        ann.logs(rid)
    assert "runs no command" in str(own.value)
    with pytest.raises(LegionError) as e:
        gateway.client("bob").logs(rid)
    assert e.value.code.startswith("auth.")


def test_query_hosts_pools_status_plan(gateway) -> None:
    ann = gateway.client("ann")
    assert ann.query("$cpus >= 1").names
    hosts = ann.hosts().hosts
    assert hosts and all(h.cpus_total is not None for h in hosts)
    assert ann.status().user == "ann" and ann.status().answering is None  # a user: not whether resources answer
    answering = gateway.client(ADMIN).status().answering  # no up.json: the resources the Collection holds
    assert answering is not None and answering["total"] > len(hosts) and answering["not_answering"] == []
    plan = ann.explain(WORKER, hosts=[hosts[0].name])
    assert plan.suite.masters and hosts[0].name in plan.hosts
    assert ann.get_candidate_placements(WORKER).masters
    assert isinstance(ann.pools().pools, dict)


def test_users_admin_only_and_removal_is_at_once(gateway) -> None:
    bob = gateway.client("bob")
    for call in (bob.users, lambda: bob.add_user("eve"), lambda: bob.remove_user(ADMIN)):
        with pytest.raises(ForbiddenError) as e:
            call()
        assert e.value.code == "auth.forbidden"
    admin = gateway.client(ADMIN)
    assert {"bob", ADMIN} <= {u.name for u in admin.users()}
    admin.remove_user("bob")
    with pytest.raises(AuthenticationError) as e:
        bob.list()
    assert e.value.code == "auth.unknown_user"


def test_user_add_writes_the_credentials_the_new_user_calls_with(gateway) -> None:
    from legionrm.client.client import Client

    admin = gateway.client(ADMIN)
    added = admin.add_user("dora", groups=["lab"], os_user="dora_unix")
    assert (added.user.name, added.user.groups, added.user.os_user) == ("dora", ("lab",), "dora_unix")
    path = gateway.home / "auth" / "users" / "dora.credentials"
    assert added.credentials == str(path) and path.stat().st_mode & 0o777 == 0o600
    assert Client.from_credentials(path).whoami().user == "dora"
    with pytest.raises(LegionError) as e:
        admin.add_user("dora")
    assert e.value.code == "user.exists"
    assert admin.remove_user("dora").removed == "dora" and not path.exists()


def test_unsigned_calls_and_open_paths(gateway) -> None:
    assert httpx.get(gateway.url + "/api/v1/requests").json()["code"] == "auth.unsigned"
    assert httpx.get(gateway.url + "/api/v1/health").json()["ok"] is True
    doc = httpx.get(gateway.url + "/api/v1/openapi.json").json()
    assert doc["openapi"].startswith("3.") and "/api/v1/requests" in doc["paths"]
    assert {"SubmitBody", "SubmitResult", "RequestInfo", "ApiError"} <= set(doc["components"]["schemas"])


def test_every_route_is_served_and_described_with_its_models(gateway) -> None:
    """One table (gateway/routes.py) makes both the router and the description: every row is in
    openapi.json with its body and answer models, every signed route answers unsigned calls with
    auth.unsigned (it is served, behind the door), and nothing is described that is not in the table."""
    from legionrm.gateway.routes import ROUTES

    doc = httpx.get(gateway.url + "/api/v1/openapi.json").json()
    schemas = doc["components"]["schemas"]
    assert {(p, m.upper()) for p, ops in doc["paths"].items() for m in ops} == {(r.url_path, r.method) for r in ROUTES}
    for r in ROUTES:
        op = doc["paths"][r.url_path][r.method.lower()]
        answer = op["responses"][str(r.status)].get("content", {}).get("application/json", {}).get("schema", {})
        assert answer.get("$ref") == (f"#/components/schemas/{r.result.__name__}" if r.result else None), r.path
        body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
        assert body.get("$ref") == (f"#/components/schemas/{r.body.__name__}" if r.body else None), r.path
        assert all(m.__name__ in schemas for m in (r.body, r.result) if m is not None)
        assert ("security" in op) == r.signed
        if r.signed:
            got = httpx.request(r.method, gateway.url + r.url_path.replace("{id}", "x").replace("{name}", "x"))
            assert got.json()["code"] == "auth.unsigned", r.path


def test_the_dashboard_pages(gateway) -> None:
    assert httpx.get(gateway.url + "/api/state").status_code == 403
    view = httpx.get(gateway.url + "/api/state", params={"key": DASH_KEY}).json()
    assert view["hosts"] and not [e for e in view["errors"] if "no_proof" in e]
    page = httpx.get(gateway.url + "/", params={"key": DASH_KEY})
    assert page.status_code == 200 and "legionrm_dashboard_key" in page.headers["set-cookie"]


def test_no_dashboard_keeps_the_api(make_gateway) -> None:
    gw = make_gateway()
    assert httpx.get(gw.url + "/api/state").status_code == 404
    assert gw.client("ann").list() == []


def test_oversize_and_over_rate(make_gateway) -> None:
    gw = make_gateway(max_body=200, rate=RateLimit(rate=0.001, burst=2))
    ann = gw.client("ann")
    with pytest.raises(TooLargeError) as e:
        ann.submit({"object": [{"class_name": "Worker", "count": 1, "constraint": "true or " * 40 + "true"}]})
    assert e.value.code == "request.too_large"
    ann.list(), ann.list()  # the burst (the refused body took nothing of it)
    with pytest.raises(RateLimitedError) as e2:
        ann.list()
    assert e2.value.code == "rate.limited" and e2.value.status == 429


def test_history_is_each_users_own_and_an_admins_all(gateway) -> None:
    """``GET /api/v1/history``: the records of finished instances, filtered as asked; a user sees their own
    (asking for another's is refused), an administrator everyone's."""
    ann, bob, admin = gateway.client("ann"), gateway.client("bob"), gateway.client(ADMIN)
    for c in (ann, bob):
        c.cancel(c.submit(WORKER).id)
    for _ in range(2):  # the Scheduler writes the records of ended instances every other tick
        gateway.system.tick()
    mine = ann.history()
    assert [r.user for r in mine] == ["ann"] and mine[0].state == "cancelled" and mine[0].cpus == 1
    assert {r.user for r in admin.history()} == {"ann", "bob"} and [r.user for r in admin.history(user="bob")] == ["bob"]
    assert ann.history(state="completed") == [] and ann.history(since=mine[0].end + 1) == []
    assert [r.instance_id for r in ann.history(until=mine[0].end)] == [mine[0].instance_id]
    with pytest.raises(LegionError) as e:
        ann.history(user="bob")
    assert e.value.code == "auth.not_owner"
    with pytest.raises(BadRequestError) as bad:
        ann.history(state="sleeping")
    assert bad.value.code == "request.invalid"


def test_the_client_reads_an_answer_as_its_model_as_json_loads_would(gateway) -> None:
    """The typed Client validates an answer's bytes in one pass: the same models as the JSON read and
    then validated; an answer that is not its model is ``client.answer``."""
    ann = gateway.client("ann")
    got = ann.submit({"hold": True, "object": [{"class_name": "Worker", "count": 1}]}, id="read-1")
    assert isinstance(got, SubmitResult) and got == ann._as(SubmitResult, got.model_dump(mode="json"))
    assert ann.show("read-1") == ann._as(RequestInfo, ann.wire.show("read-1"))
    assert ann.cancel("read-1").state == "cancelled"
    with pytest.raises(GatewayError) as bad:
        ann._reader(RequestInfo)(b'{"id": 1}')
    assert bad.value.code == "client.answer"
