"""A boot that fails half way leaves no named actor behind: the next boot in
the same Ray namespace (a retried ``up``, the next test module) is never
refused with ``ActorAlreadyExistsError`` by the remains of the failed one."""

from __future__ import annotations

import pytest

from legionrm.models import ClassSpec, ClusterSpec, HostSpec
from legionrm.naming import named_actor
from legionrm.testing import eventually

pytestmark = pytest.mark.ray


def test_a_boot_that_fails_half_way_leaves_no_named_actor(ray_cluster, monkeypatch) -> None:
    from legionrm.system import bootstrap as boot_module

    def silent(*_args, **_kw) -> None:
        raise TimeoutError("injected: the resources did not answer in time")

    monkeypatch.setattr(boot_module, "await_answers", silent)  # fails after every actor was created
    spec = ClusterSpec(hosts=(HostSpec(name="b0", attributes={"cpus": 1, "memory_gb": 1}),),
                       classes=(ClassSpec(name="W"),))
    created: list[list[str]] = []
    real_system = boot_module.System

    def recording(*args, **kw):
        s = real_system(*args, **kw)
        created.append(s)  # type: ignore[arg-type]
        return s

    monkeypatch.setattr(boot_module, "System", recording)
    with pytest.raises(TimeoutError):
        boot_module.boot(spec, auth_home=False)
    names = created[0].names()  # type: ignore[attr-defined]
    assert len(names) >= 5  # the collection, a host group, a class, the enactor, the pools, the scheduler
    left = eventually(lambda: [n for n in names if named_actor(n) is not None], lambda got: not got)
    assert left == []
