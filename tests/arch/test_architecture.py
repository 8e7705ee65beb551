"""The house's shape, checked on every run (DESIGN.md, "The package" and
"Rules of the house"): no import cycles, Ray only in the shells, one-way
layers, engines reached only through their package, no imports inside
functions but the deliberate lazy ones.  The rules are also run on small
made-up packages (``test_rule_bites``) to show each one fails when broken."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.arch.importgraph import Module, cycles, internal_edges, read_package, under

ROOT = Path(__file__).resolve().parents[2] / "legionrm"

ENGINES = ("legionrm.scheduler.fairshare", "legionrm.scheduler.placement", "legionrm.scheduler.pools",
           "legionrm.scheduler.elastic")

# Lowest first.  A module imports only its own group and groups of lower
# layers, so dependencies run one way: cli -> system -> scheduler -> engines
# -> collection -> mil -> models/errors.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("legionrm.models", "legionrm.errors", "legionrm.scheduler", "legionrm.version", "legionrm.ahead",
     "legionrm.events"),  # legionrm.scheduler and the new packages: their docstring map only
    ("legionrm.mil", "legionrm.tomlio", "legionrm.ahead.steps", "legionrm.events.triggers", "legionrm.testing",
     "legionrm.state", "legionrm.metrics", "legionrm.dashboard", "legionrm.auth", "legionrm.objstate",
     "legionrm.client"),  # client: models/errors and HTTP only
    # auth: models/errors only; objstate: its pure store and hooks
    ("legionrm.collection", "legionrm.naming", "legionrm.objstate.actor", "legionrm.events.actor"),
    ("legionrm.hostobj", "legionrm.enactor"),
    ENGINES[:3] + ("legionrm.scheduler.pipeline", "legionrm.scheduler.ports", "legionrm.scheduler.requests",
                   "legionrm.scheduler.watch", "legionrm.scheduler.capacity",
                   "legionrm.scheduler.confirm"),
    ("legionrm.scheduler.recovery",),
    ("legionrm.scheduler.elastic", "legionrm.scheduler.snaptables", "legionrm.config", "legionrm.request_file",
     "legionrm.ahead.window"),
    ("legionrm.scheduler.engine_door",),
    ("legionrm.scheduler.planning",),
    ("legionrm.scheduler.planner", "legionrm.scheduler.build"),
    ("legionrm.scheduler.sharegate", "legionrm.ahead.starts"),
    ("legionrm.scheduler.scheduler",),
    ("legionrm.objstate.mobility",),
    ("legionrm.scheduler.door",),
    ("legionrm.scheduler.audit",),
    ("legionrm.scheduler.actor", "legionrm.inprocess"),
    ("legionrm.system", "legionrm.dashboard.server"),
    ("legionrm.gateway",),  # the front door: over the control plane (system), under the CLI
    ("legionrm.cli",),
    ("legionrm",),  # the root package: the public surface, above all it re-exports
)

EXACT = ("legionrm", "legionrm.scheduler", "legionrm.ahead", "legionrm.events")
"""Packages placed by their ``__init__`` alone: a new module inside them needs a layer of its own."""

RAY_SHELLS = ("legionrm.system", "legionrm.naming", "legionrm.hostobj.ray_node", "legionrm.cli", "legionrm.metrics",
              "legionrm.dashboard.server", "legionrm.gateway.control")
"""Besides every ``*.actor`` module: where Ray may be imported."""

LAZY = {
    ("legionrm.cli.shell", "prompt_toolkit"): "a terminal library only for the interactive shell",
    ("legionrm.cli.shell", "prompt_toolkit.completion"): "same",
    ("legionrm.cli.shell", "prompt_toolkit.history"): "same",
    ("legionrm.cli.simulate", "matplotlib"): "an optional plotting library, only for `simulate --plot`",
    ("legionrm.cli.simulate", "matplotlib.pyplot"): "same",
}
"""Imports inside a function, allowed on purpose (heavy, optional, lazy)."""


def group(name: str) -> str:
    """The longest layer entry a module belongs to."""
    if name in EXACT:
        return name
    best = max((g for layer in LAYERS for g in layer if under(name, g) and g not in EXACT), key=len, default="")
    if not best:
        raise AssertionError(f"{name} is in no layer of tests/arch/test_architecture.py: place it")
    return best


def layer_of(g: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if g in layer)


# --- the rules: each returns the violations it finds --------------------------------


def rule_cycles(mods: dict[str, Module]) -> list[str]:
    return [" <-> ".join(c) for c in cycles(internal_edges(mods))]


def rule_ray(mods: dict[str, Module]) -> list[str]:
    return [
        f"{m.name} imports {t}"
        for m in mods.values()
        if not (m.name.endswith(".actor") or any(under(m.name, s) for s in RAY_SHELLS))
        for t in sorted(m.imports)
        if under(t, "ray")
    ]


def rule_layers(mods: dict[str, Module]) -> list[str]:
    out = []
    for name, deps in internal_edges(mods).items():
        g = group(name)
        for d in sorted(deps):
            gd = group(d)
            if gd != g and layer_of(gd) >= layer_of(g):
                out.append(f"{name} ({g}, layer {layer_of(g)}) imports {d} ({gd}, layer {layer_of(gd)})")
    return out


def rule_engine_surface(mods: dict[str, Module]) -> list[str]:
    """Outside an engine, only the engine's package (its ``__init__`` names) is imported."""
    out = []
    for m in mods.values():
        for t in sorted(m.imports):
            for e in ENGINES:
                if under(t, e) and t != e and not under(m.name, e):
                    out.append(f"{m.name} imports {t}: use {e}")
    return out


def rule_no_cli_below(mods: dict[str, Module]) -> list[str]:
    return [f"{m.name} imports {t}" for m in mods.values() if not under(m.name, "legionrm.cli")
            for t in sorted(m.imports) if under(t, "legionrm.cli")]


def rule_mil_alone(mods: dict[str, Module]) -> list[str]:
    """MIL imports nothing of legionrm but itself and the error tree (never the Collection)."""
    return [f"{m.name} imports {t}" for m in mods.values() if under(m.name, "legionrm.mil")
            for t in sorted(m.imports)
            if under(t, "legionrm") and not (under(t, "legionrm.mil") or t == "legionrm.errors")]


def rule_inner_imports(mods: dict[str, Module]) -> list[str]:
    return [f"{m.name}:{line} imports {t} inside a function" for m in mods.values() for line, t in m.inner
            if (m.name, t) not in LAZY]


RULES = {
    "no import cycles": rule_cycles,
    "ray only in the shells": rule_ray,
    "layers run one way": rule_layers,
    "engines only through their package": rule_engine_surface,
    "nothing below cli imports cli": rule_no_cli_below,
    "mil stands alone": rule_mil_alone,
    "no imports inside functions": rule_inner_imports,
}


@pytest.fixture(scope="module")
def legionrm_modules() -> dict[str, Module]:
    return read_package(ROOT)


@pytest.mark.parametrize("rule", list(RULES), ids=list(RULES))
def test_legionrm_keeps_the_rule(rule: str, legionrm_modules: dict[str, Module]) -> None:
    assert RULES[rule](legionrm_modules) == []


def test_every_module_has_a_layer(legionrm_modules: dict[str, Module]) -> None:
    for name in legionrm_modules:
        group(name)


def test_no_module_over_500_lines_and_no_folder_over_15_modules(legionrm_modules: dict[str, Module]) -> None:
    long = {m.name: n for m in legionrm_modules.values()
            if (n := len(m.path.read_text(encoding="utf-8").splitlines())) > 550}
    assert long == {}
    folders: dict[Path, int] = {}
    for m in legionrm_modules.values():
        if m.path.name != "__init__.py":
            folders[m.path.parent] = folders.get(m.path.parent, 0) + 1
    assert {str(f): n for f, n in folders.items() if n > 16} == {}


# --- the rules bite: each made-up package breaks one rule ------------------------------

BROKEN = {
    "no import cycles": {
        "legionrm/mil/a.py": "from legionrm.mil import b\n",
        "legionrm/mil/b.py": "from legionrm.mil.a import x\n",
    },
    "ray only in the shells": {"legionrm/mil/a.py": "import ray\n"},
    "layers run one way": {"legionrm/collection/a.py": "from legionrm.scheduler.scheduler import Scheduler\n",
                           "legionrm/scheduler/scheduler.py": ""},
    "engines only through their package": {
        "legionrm/scheduler/placement/base.py": "",
        "legionrm/scheduler/pools/gate.py": "from legionrm.scheduler.placement.base import Placer\n",
    },
    "nothing below cli imports cli": {"legionrm/system.py": "from legionrm.cli import main\n",
                                      "legionrm/cli/__init__.py": ""},
    "mil stands alone": {"legionrm/mil/a.py": "from legionrm.collection import store\n",
                         "legionrm/collection/store.py": ""},
    "no imports inside functions": {"legionrm/mil/a.py": "def f():\n    from legionrm.mil import b\n",
                                    "legionrm/mil/b.py": ""},
}


def _package(tmp_path: Path, files: dict[str, str]) -> dict[str, Module]:
    for rel, text in {"legionrm/__init__.py": "", **files}.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        for parent in p.relative_to(tmp_path).parents:
            if str(parent) != ".":
                (tmp_path / parent / "__init__.py").touch()
        p.write_text(text)
    return read_package(tmp_path / "legionrm")


@pytest.mark.parametrize("rule", list(BROKEN), ids=list(BROKEN))
def test_rule_bites(rule: str, tmp_path: Path) -> None:
    mods = _package(tmp_path, BROKEN[rule])
    assert RULES[rule](mods) != []


def test_type_checking_imports_do_not_make_a_cycle(tmp_path: Path) -> None:
    mods = _package(tmp_path, {
        "legionrm/mil/a.py": "from legionrm.mil import b\n",
        "legionrm/mil/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from legionrm.mil import a\n",
    })
    assert rule_cycles(mods) == []
