"""Implementations per architecture: a class lists implementations (arch,
OS, entry point, requirements); the planner only considers hosts one fits
(the ``implementation`` filter) and the class object starts the one that
fits the host it was given."""

from __future__ import annotations

import pytest

from legionrm.config import load_cluster as parse_cluster
from legionrm.errors import ConfigError
from legionrm import codes
from legionrm.inprocess import LocalSystem
from legionrm.models import ClassSpec, ClusterSpec, HostSpec, Identity, ImplementationSpec, ObjectRequest, SchedulingRequest
from legionrm.testing import FakeClock

X86 = ImplementationSpec(arch="x86_64", os="linux", entry="pkg.x86:Worker")
ARM = ImplementationSpec(arch="aarch64", os="linux", entry="pkg.arm:Worker", requirements="$memory_gb >= 8")


def system(*impls: ImplementationSpec) -> LocalSystem:
    spec = ClusterSpec(
        hosts=(HostSpec(name="x1", attributes={"cpus": 4, "memory_gb": 16, "arch": "x86_64", "os": "linux"}),
               HostSpec(name="a1", attributes={"cpus": 8, "memory_gb": 16, "arch": "aarch64", "os": "linux"}),
               HostSpec(name="a2", attributes={"cpus": 8, "memory_gb": 4, "arch": "aarch64", "os": "linux"}),
               HostSpec(name="p1", attributes={"cpus": 16, "memory_gb": 64, "arch": "ppc64le", "os": "aix"})),
        classes=(ClassSpec(name="W", implementations=impls),),
    )
    return LocalSystem(spec, clock=FakeClock())


def req(rid: str, count: int = 1) -> SchedulingRequest:
    return SchedulingRequest(request_id=rid, identity=Identity(user="u"), wait=False,
                             objects=(ObjectRequest(class_name="W", count=count, cpus=1, memory_gb=1, placement="scatter"),))


def test_a_two_implementation_class_runs_only_where_one_fits() -> None:
    s = system(X86, ARM)
    r = s.scheduler.scheduleObjects(req("r", count=2))
    assert r.ok, r.message
    assert sorted(i.host for i in r.instances) == ["a1", "x1"]
    plan = s.scheduler.make_schedules(req("q"))
    assert "implementation (class.no_implementation)" in plan.why("p1")
    assert "implementation (class.no_implementation)" in plan.why("a2")  # arm, but its requirements fail
    assert s.scheduler.scheduleObjects(req("three", count=3)).ok is False  # only two hosts fit


def test_the_chosen_implementation_reaches_the_host() -> None:
    s = system(X86, ARM)
    seen = []
    for name in ("x1", "a1"):
        h = s.host(name)
        orig = h.start_object

        def spy(*a, _orig=orig, **kw):
            seen.append((kw.get("impl"), a[0].issuer))
            return _orig(*a, **kw)
        h.start_object = spy
    assert s.scheduler.scheduleObjects(req("r", count=2)).ok
    assert sorted(seen, key=lambda x: x[1]) == [("pkg.arm:Worker", "a1"), ("pkg.x86:Worker", "x1")]


def test_class_object_refuses_a_host_no_implementation_fits() -> None:
    s = system(X86)
    cls = s.classes["W"]
    assert cls.implementation_for(s.carrier("x1"), "x1") == "pkg.x86:Worker"
    refusal = cls.implementation_for(s.carrier("a1"), "a1")
    assert getattr(refusal, "code", None) == codes.CLASS_NO_IMPLEMENTATION


def test_a_class_without_implementations_runs_anywhere() -> None:
    s = system()
    assert s.scheduler.scheduleObjects(req("r", count=4)).ok


def test_the_cluster_file_lists_implementations(tmp_path) -> None:
    text = '''
[[host]]
name = "x1"
attributes = { cpus = 4, memory_gb = 8, arch = "x86_64", os = "linux" }

[[class]]
name = "W"
implementations = [
  { arch = "x86_64", os = "linux", entry = "pkg.x86:Worker" },
  { arch = "aarch64", entry = "pkg.arm:Worker", requirements = "$memory_gb >= 8" },
]
'''
    p = tmp_path / "c.toml"
    p.write_text(text)
    spec = parse_cluster(p)
    impls = spec.classes[0].implementations
    assert [(i.arch, i.os, i.entry) for i in impls] == [("x86_64", "linux", "pkg.x86:Worker"),
                                                        ("aarch64", "*", "pkg.arm:Worker")]
    p.write_text(text.replace('entry = "pkg.arm:Worker"', 'entry = "not a path"'))
    with pytest.raises(ConfigError):
        parse_cluster(p)
    p.write_text(text.replace('"$memory_gb >= 8"', '"$memory_gb >>"'))
    with pytest.raises(ConfigError, match="requirements"):
        parse_cluster(p)
