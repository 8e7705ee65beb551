"""Live changes through the gateway (administrators): reload a cluster file,
change one pool, drain and resume a host, list the schedulers.  A refused
change leaves everything exactly as it was (the state compared before and
after) and says why in one line."""

from __future__ import annotations

import json

import pytest

from legionrm.client.errors import GatewayError as ClientError
from legionrm.config import default_cluster_path

from .conftest import ADMIN, WORKER

POOLS = """
[[pool]]
path = "/batch"
cpu = { limit = 8 }
memory = { limit = 65536 }

[[pool]]
path = "/fast"
cpu = { limit = 4 }
memory = { limit = 65536 }
"""


def cluster_text(extra: str = "") -> str:
    return default_cluster_path().read_text() + extra


def pooled(req: dict, pool: str) -> dict:
    return {**req, "pool": pool}


def test_a_pool_created_by_reload_admits_work_at_once(gateway) -> None:
    admin, ann = gateway.client(ADMIN), gateway.client("ann")
    got = admin.reload(cluster_text(POOLS), "new.toml")
    assert set(got.changes) >= {"pool create /batch", "pool create /fast"}  # (and the file's own, new to this system)
    r = ann.submit(pooled(WORKER, "/fast"))
    assert r.ok and ann.show(r.id).pool == "/fast"
    assert set(admin.pools().pools) >= {"/batch", "/fast"}
    assert admin.reload(cluster_text(POOLS), "new.toml").changes == ()  # nothing left to do


def state(gateway) -> tuple:
    admin = gateway.client(ADMIN)
    return admin.pools().pools, [(i.id, i.state, i.pool) for i in admin.list()]


@pytest.mark.parametrize("change", [
    ("update", {"path": "/fast", "cpu": {"reservation": 9, "limit": 4}}),  # reservation over its limit
    ("update", {"path": "/nowhere", "cpu": {"limit": 1}}),
    ("delete", {"path": "/fast"}),  # it holds admitted work: busy
    ("create", {"path": "/batch", "cpu": {"limit": 1}}),  # exists
], ids=["reservation-over-limit", "unknown", "busy", "twice"])
def test_a_pool_change_the_validators_refuse_changes_nothing(gateway, change) -> None:
    admin = gateway.client(ADMIN)
    admin.reload(cluster_text(POOLS))
    gateway.client("ann").submit(pooled(WORKER, "/fast"))
    before = state(gateway)
    with pytest.raises(ClientError) as err:
        admin.edit_pool(*change)
    assert err.value.code == "reload.refused" and "\n" not in str(err.value)
    assert state(gateway) == before


def test_a_reload_refused_by_a_validator_changes_nothing(gateway) -> None:
    admin = gateway.client(ADMIN)
    admin.reload(cluster_text(POOLS))
    gateway.client("ann").submit(pooled(WORKER, "/fast"))
    before = state(gateway)
    with pytest.raises(ClientError) as err:  # /fast is gone from the file, but it holds work
        admin.reload(cluster_text(POOLS.split("[[pool]]\npath = \"/fast\"")[0] + '\n[[pool]]\npath = "/new"\n'
                                  'cpu = { limit = 2 }\nmemory = { limit = 1024 }\n'))
    assert err.value.code == "reload.refused" and "/fast" in str(err.value) and "busy" in str(err.value)
    assert state(gateway) == before  # /new was not created either: all or nothing


def test_what_reload_cannot_apply_live_is_refused_in_one_line(gateway) -> None:
    admin = gateway.client(ADMIN)
    with pytest.raises(ClientError) as err:
        admin.reload(cluster_text('\n[[scheduler]]\nname = "a"\n\n[[scheduler]]\nname = "b"\n'))
    assert err.value.code == "reload.refused" and "down" in str(err.value)
    with pytest.raises(ClientError) as err:
        admin.reload('[[host]]\nname = "solo"\nattributes = { cpus = 2 }\n')
    assert err.value.code == "reload.refused" and "hosts" in str(err.value)
    with pytest.raises(ClientError) as err:  # not applied live: refused, never silently ignored
        admin.reload(cluster_text('\n[queue]\npolicy = "fcfs"\n'))
    assert err.value.code == "reload.refused" and "queue" in str(err.value)
    with pytest.raises(ClientError) as err:
        admin.reload(cluster_text().replace("cpus = 20", "cpus = 30"))
    assert err.value.code == "reload.refused" and "host lab1's attributes changed" in str(err.value)
    with pytest.raises(ClientError) as err:  # a bad file: the file, the table and the key, in one line
        admin.reload(cluster_text('\n[[pool]]\npath = "/x"\ncolour = 1\n'), "bad.toml")
    assert "bad.toml" in str(err.value) and "\n" not in str(err.value)


DEBUG_LIMIT = ("max_running_cpus_per_user = 8", "max_running_cpus_per_user = 1")


def everything(gateway) -> tuple:
    """What a reload may change, as the system shows it: the pools, the requests, the QoS and
    weights (``prio``), and each host's policy and access as the Collection offers it."""
    admin = gateway.client(ADMIN)
    core = gateway.system.scheduler.queue.site
    hosts = [(h.name, h.policy.name if h.policy else None, h.access) for g in gateway.system.groups.values()
             for h in (g.get(n) for n in g.names())]
    offered = sorted((r.name, r.access) for r in gateway.system.collection.query("true", None, True).records)
    return state(gateway), core.settings, admin.prio().weights, hosts, offered


def test_a_qos_limit_reloaded_holds_the_next_request_pending_with_the_limit_as_reason(gateway) -> None:
    admin, ann = gateway.client(ADMIN), gateway.client("ann")
    first = ann.submit({**WORKER, "qos": "debug"})
    assert ann.show(first.id).state == "running"
    got = admin.reload(cluster_text().replace(*DEBUG_LIMIT))
    assert "site policy (qos, fair share)" in got.changes  # (beside the file's pools, new to this system)
    second = ann.submit({**WORKER, "qos": "debug"})
    info = ann.show(second.id)
    assert info.state == "pending" and info.reason.startswith("qos.max_running_cpus_per_user")
    assert ann.submit(WORKER).ok  # its other QoS is not held
    admin.reload(cluster_text())  # and back: the limit is 8 again
    gateway.system.tick()
    assert ann.show(second.id).state == "running"


def test_a_qos_a_request_is_in_cannot_be_dropped_and_nothing_changes(gateway) -> None:
    admin, ann = gateway.client(ADMIN), gateway.client("ann")
    r = ann.submit({**WORKER, "qos": "debug"})
    before = everything(gateway)
    dropped = cluster_text().replace('name = "debug"', 'name = "quick"')  # (and a host policy change beside it)
    with pytest.raises(ClientError) as err:
        admin.reload(dropped.replace("max_load = 0.5", "max_load = 0.9"))
    assert err.value.code == "reload.refused" and r.id in str(err.value) and "'debug'" in str(err.value)
    assert "\n" not in str(err.value) and everything(gateway) == before


def test_a_host_policy_reloaded_refuses_the_user_at_once(gateway) -> None:
    admin, ann = gateway.client(ADMIN), gateway.client("ann")
    assert "used by master 1" in ann.explain(WORKER, hosts=["lab1"]).hosts["lab1"]
    text = cluster_text().replace('policy = "LoadCeiling"\npolicy_args = { max_load = 0.5 }',
                                  'policy = "DenyUsers"\npolicy_args = { names = ["ann"] }')
    assert "host lab1 policy and access" in admin.reload(text).changes
    with pytest.raises(ClientError) as err:  # the policy narrows the access list: not offered to ann at all
        ann.explain(WORKER, hosts=["lab1"])
    assert err.value.code == "auth.forbidden" and "lab1" not in {h.name for h in ann.hosts().hosts}
    for _ in range(3):
        assert ann.show(ann.submit(WORKER).id).instances[0].host != "lab1"
    lab1 = gateway.system.host("lab1")
    assert lab1.policy is not None and lab1.policy.name == "DenyUsers(ann)"


def test_an_access_list_reloaded_reaches_the_collection_at_once(gateway) -> None:
    admin, ann = gateway.client(ADMIN), gateway.client("ann")
    assert "lab1" in {h.name for h in ann.hosts().hosts}
    text = cluster_text().replace('name = "lab1"\n', 'name = "lab1"\naccess = { deny_users = ["ann"] }\n')
    assert "host lab1 policy and access" in admin.reload(text).changes
    assert "lab1" not in {h.name for h in ann.hosts().hosts}
    assert "lab1" in {h.name for h in gateway.client("bob").hosts().hosts}


def test_a_policy_that_does_not_import_is_refused_and_nothing_changes(gateway) -> None:
    admin = gateway.client(ADMIN)
    before = everything(gateway)
    text = cluster_text().replace(*DEBUG_LIMIT).replace('policy = "LoadCeiling"', 'policy = "nowhere.at_all:Ceiling"')
    with pytest.raises(ClientError) as err:
        admin.reload(text, "bad.toml")
    assert "nowhere.at_all" in str(err.value) and "\n" not in str(err.value)
    assert everything(gateway) == before


def test_a_step_that_fails_part_way_is_set_back(gateway, monkeypatch) -> None:
    """The hosts' step fails after the pools and the site policy were applied: both are set back."""
    from legionrm.gateway import local

    admin = gateway.client(ADMIN)
    admin.reload(cluster_text(POOLS))
    before = everything(gateway)
    real = local._SchedulerFacade.reconfigure_owners

    def failing(self, changes, check=False, cluster=None, proof=None):
        out = real(self, changes, check, cluster, proof)
        if not check and changes and changes[0].policy == "DenyUsers":  # applied, then the actor "dies"
            raise RuntimeError("host group died")
        return out

    monkeypatch.setattr(local._SchedulerFacade, "reconfigure_owners", failing)
    text = (cluster_text(POOLS + '[[pool]]\npath = "/extra"\ncpu = { limit = 2 }\n').replace(*DEBUG_LIMIT)
            .replace('policy = "LoadCeiling"\npolicy_args = { max_load = 0.5 }',
                     'policy = "DenyUsers"\npolicy_args = { names = ["ann"] }'))
    with pytest.raises(ClientError) as err:
        admin.reload(text)
    assert err.value.code == "reload.rolled_back" and "host group died" in str(err.value)
    assert "pools" in str(err.value) and "site policy" in str(err.value) and "\n" not in str(err.value)
    assert everything(gateway) == before


def test_only_administrators_reload_change_pools_or_drain(gateway) -> None:
    ann = gateway.client("ann")
    for attempt in (lambda: ann.reload(cluster_text(POOLS)), lambda: ann.edit_pool("delete", {"path": "/x"}),
                    lambda: ann.drain("lab1", "mine now"), lambda: ann.resume("lab1")):
        with pytest.raises(ClientError) as err:
            attempt()
        assert err.value.code == "auth.forbidden"


def test_a_drained_host_takes_no_new_work_and_hosts_shows_why(gateway) -> None:
    admin, ann = gateway.client(ADMIN), gateway.client("ann")
    host = ann.submit(WORKER)
    first = ann.show(host.id).instances[0].host
    assert admin.drain(first, "disk swap").drained == "disk swap"
    rows = {h.name: h for h in admin.hosts().hosts}
    assert rows[first].drained == "disk swap"
    assert ann.show(host.id).state == "running"  # it finishes its work
    plan = ann.explain(WORKER, hosts=[first])
    assert "host.drained" in plan.hosts[first]
    assert admin.resume(first).drained is None and {h.name: h for h in admin.hosts().hosts}[first].drained is None
    with pytest.raises(ClientError) as err:
        admin.drain("no-such-host", "x")
    assert err.value.code == "resource.unknown"


def test_schedulers_lists_each_with_its_queue(gateway) -> None:
    gateway.client("ann").submit(WORKER)
    rows = gateway.client(ADMIN).schedulers().schedulers
    assert [(r.name, r.default) for r in rows] == [("default", True)]
    assert rows[0].requests.get("running") == 1


def test_the_admin_verbs_on_the_command_line(gateway, tmp_path, capsys) -> None:
    from legionrm.cli import main

    creds = ["--credentials", str(gateway.admin_path)]
    cluster = tmp_path / "c.toml"
    cluster.write_text(cluster_text(POOLS))
    assert main(["reload", "--cluster", str(cluster), *creds]) == 0 and "pool create /fast" in capsys.readouterr().out
    assert main(["reload", str(cluster), *creds]) == 0  # the file as an argument, as the flag
    assert capsys.readouterr().out.strip() == "nothing to change"
    other = tmp_path / "other.toml"
    assert main(["reload", str(other), "--cluster", str(cluster), *creds]) == 2  # two files: which one?
    err = capsys.readouterr().err
    assert "two cluster files given" in err and err.count("\n") == 1
    assert main(["pools", "create", "/tiny", "cpu=0:1", "memory=0:1024", *creds]) == 0
    assert capsys.readouterr().out.strip() == "pool create /tiny"
    assert main(["pools", "update", "/tiny", "cpu=5:1", *creds]) == 2  # reservation past its limit
    err = capsys.readouterr().err
    assert "reload.refused" in err and err.count("\n") == 1
    assert main(["pools", "delete", "/tiny", "--json", *creds]) == 0
    assert json.loads(capsys.readouterr().out) == {"changes": ["pool delete /tiny"]}
    assert main(["drain", "lab1", "--reason", "fan noise", *creds]) == 0 and "fan noise" in capsys.readouterr().out
    assert main(["hosts", *creds]) == 0 and "fan noise" in capsys.readouterr().out
    assert main(["resume", "lab1", *creds]) == 0 and "new work" in capsys.readouterr().out
    assert main(["schedulers", *creds]) == 0 and "default (default)" in capsys.readouterr().out
