"""An owner's policy and access list changed on running hosts and vaults
(:func:`legionrm.hostobj.live.reconfigure`): it holds at once (the next reservation is
judged by it, the Collection hears the new access list), all or none, and a check or a
refusal changes nothing."""

from __future__ import annotations

import pytest

from legionrm.hostobj import HostGroup, HostObject, build_host, build_vault
from legionrm.hostobj.durable import Keeper
from legionrm.hostobj.live import owners_back, reconfigure
from legionrm.state import StoreFault
from legionrm.models import (
    AccessPolicy,
    Holder,
    HostSpec,
    OwnerPolicy,
    Refusal,
    ReservationRequest,
    ResourceRecord,
    Resources,
    VaultSpec,
)


class Sink:
    """A Collection that keeps the last record each resource joined with."""

    def __init__(self) -> None:
        self.records: dict[str, ResourceRecord] = {}

    def join(self, record: ResourceRecord) -> None:
        self.records[record.name] = record

    def update(self, name, attrs) -> None:
        pass

    def leave(self, name) -> None:
        self.records.pop(name, None)


class OwnedHost(HostObject):
    """An owner's subclass: its hooks are its policy."""


def group() -> tuple[HostGroup, Sink]:
    sink = Sink()
    hosts = [build_host(HostSpec(name=n, attributes={"cpus": 4, "memory_gb": 8})) for n in ("h1", "h2")]
    hosts.append(OwnedHost("h3", Resources(cpus=4, memory_gb=8)))
    g = HostGroup("g", hosts, sink=sink)
    g.join()
    return g, sink


def ask(g: HostGroup, host: str, user: str = "ann", rid: str = "r") -> object:
    return g.get(host).make_reservation(ReservationRequest(request_id=f"{rid}-{host}", resource=host,
                                                           holder=Holder(user=user, class_name="W"),
                                                           resources=Resources(cpus=1)))


def state(g: HostGroup) -> list:
    return [(h.policy.name if h.policy else None, h.access) for h in (g.get(n) for n in g.names())]


def deny(host: str, *users: str, **kw) -> OwnerPolicy:
    return OwnerPolicy(resource=host, policy="DenyUsers", policy_args={"names": list(users)}, **kw)


def test_a_new_policy_judges_the_next_reservation() -> None:
    g, _ = group()
    assert not isinstance(ask(g, "h1", rid="before"), Refusal)
    assert reconfigure(g.get, [deny("h1", "ann")]) is None
    got = ask(g, "h1", rid="after")
    assert isinstance(got, Refusal) and got.code == "policy.user" and "h1" in got.by
    assert not isinstance(ask(g, "h1", user="bob"), Refusal)
    assert reconfigure(g.get, [OwnerPolicy(resource="h1")]) is None  # no policy again
    assert not isinstance(ask(g, "h1", rid="again"), Refusal)


def test_a_new_access_list_reaches_the_collection_at_once() -> None:
    g, sink = group()
    access = AccessPolicy(allow_users=("bob",))
    assert reconfigure(g.get, [OwnerPolicy(resource="h2", access=access)]) is None
    assert sink.records["h2"].access == access and g.get("h2").access == access
    got = ask(g, "h2")
    assert isinstance(got, Refusal) and got.code == "policy.user"


@pytest.mark.parametrize("changes, words", [
    ([deny("h1", "ann"), OwnerPolicy(resource="h2", policy="nowhere.at_all:P")], ["h2", "cannot import"]),
    ([deny("h1", "ann"), OwnerPolicy(resource="h2", policy="LoadCeiling", policy_args={"ceiling": 1})],
     ["h2", "bad policy_args"]),
    ([deny("h1", "ann"), deny("h9", "ann")], ["h9", "no host"]),
    ([deny("h1", "ann"), deny("h3", "ann")], ["h3", "OwnedHost", "down"]),
    ([deny("h1", "ann"), OwnerPolicy(resource="h2", policy=f"{__name__}:OwnedHost")], ["h2", "owner's subclass"]),
], ids=["does-not-import", "bad-arguments", "unknown-host", "owner-subclass-host", "to-an-owner-subclass"])
def test_a_refused_change_changes_no_host(changes, words) -> None:
    g, sink = group()
    before, records = state(g), dict(sink.records)
    for check in (True, False):
        why = reconfigure(g.get, changes, check=check)
        assert why is not None and why.code == "reload.refused" and all(w in why.reason + why.by for w in words), why
        assert "\n" not in why.reason
        assert state(g) == before and sink.records == records


def test_a_check_changes_nothing() -> None:
    g, sink = group()
    before, records = state(g), dict(sink.records)
    assert reconfigure(g.get, [deny("h1", "ann"), OwnerPolicy(resource="h2", access=AccessPolicy(deny_users=("x",)))],
                       check=True) is None
    assert state(g) == before and sink.records == records


def test_an_owners_subclass_takes_a_new_access_list_but_keeps_its_hooks() -> None:
    g, _ = group()
    access = AccessPolicy(deny_users=("ann",))
    assert reconfigure(g.get, [OwnerPolicy(resource="h3", policy=f"{__name__}:OwnedHost", access=access)]) is None
    assert g.get("h3").access == access and isinstance(ask(g, "h3"), Refusal)


def test_a_vault_takes_its_owners_policy_too() -> None:
    sink = Sink()
    v = build_vault(VaultSpec(name="v1", attributes={"storage_gb": 10}), sink=sink)
    v.join()
    change = OwnerPolicy(resource="v1", kind="vault", policy="DenyUsers", policy_args={"names": ["ann"]},
                         access=AccessPolicy(deny_users=("ann",)))
    assert reconfigure(lambda n: v if n == "v1" else None, [change]) is None
    assert v.policy is not None and v.policy.name == "DenyUsers(ann)" and "ann" in sink.records["v1"].access.deny_users


def fresh(path: str, boot: str = "actor-1") -> tuple[HostGroup, Keeper]:
    """The group as an actor Ray restarted builds it (``boot``: its actor id, which a restart keeps
    and a new ``up`` does not): from the cluster file, then its state file."""
    g, _ = group()
    keeper = Keeper.open(path, [g.get(n) for n in g.names()], boot)
    owners_back([g.get(n) for n in g.names()])
    return g, keeper


def test_a_reloaded_policy_is_written_first_and_an_actor_restarted_takes_it_back(tmp_path) -> None:
    path = str(tmp_path / "hosts.sqlite")
    g, keeper = fresh(path)
    access = AccessPolicy(deny_users=("cy",))
    assert reconfigure(g.get, [deny("h1", "ann", access=access)], keep=keeper.save) is None
    keeper.store.close()
    back, _ = fresh(path)
    assert state(back)[0] == ("DenyUsers(ann)", access)  # not the cluster file's (no policy, open access)
    assert isinstance(ask(back, "h1"), Refusal) and not isinstance(ask(back, "h2"), Refusal)
    assert state(back)[1:] == state(group()[0])[1:]  # the hosts no reload touched: as the file says


def test_a_new_up_on_the_same_state_file_starts_from_its_cluster_files_policy(tmp_path) -> None:
    path = str(tmp_path / "hosts.sqlite")
    g, keeper = fresh(path)
    assert reconfigure(g.get, [deny("h1", "ann")], keep=keeper.save) is None
    keeper.store.close()
    new_up, keeper = fresh(path, boot="actor-2")
    assert state(new_up) == state(group()[0])  # the file's policies, not the reload the last boot took
    assert not isinstance(ask(new_up, "h1"), Refusal)
    keeper.save()
    keeper.store.close()
    again, _ = fresh(path, boot="actor-2")  # and what the new boot writes no longer carries the old reload
    assert state(again) == state(group()[0])


def test_a_policy_the_store_cannot_write_is_not_applied(tmp_path) -> None:
    g, keeper = fresh(str(tmp_path / "hosts.sqlite"))
    before = state(g)

    def full() -> None:
        raise StoreFault("state.disk_full", "host state", "hosts.sqlite", "database or disk is full")

    why = reconfigure(g.get, [deny("h1", "ann")], keep=full)
    assert isinstance(why, Refusal) and why.code == "state.disk_full"
    assert state(g) == before and g.get("h1").owner_change is None
    assert not isinstance(ask(g, "h1"), Refusal)
