"""The house's shape, checked on every run (DESIGN.md, "The package" and
"Rules of the house").  Each rule in :data:`RULES` is named by its test id
and says in its docstring exactly what it forbids: no import cycle among
modules, none among the packages directly under ``legionrm`` nor among the
parts of ``legionrm.scheduler``; hostobj never imports the scheduler; Ray
only in the shells; one-way layers; engines reached only through their
package; nothing below the CLI imports it; MIL stands alone; no imports
inside functions but the deliberate lazy ones.  Besides: every module has a
layer, and no module or folder is over its size cap.  Every rule is also run
on a small made-up package that breaks it (``test_rule_bites``), to show it
fails when broken."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.arch.importgraph import Module, crossings, cycles, internal_edges, package_edges, read_package, under

ROOT = Path(__file__).resolve().parents[2] / "legionrm"

ENGINES = ("legionrm.scheduler.fairshare", "legionrm.scheduler.placement", "legionrm.scheduler.pools",
           "legionrm.scheduler.elastic")

# Lowest first.  A module imports only its own group and groups of lower
# layers, so dependencies run one way: cli -> system -> scheduler -> engines
# -> collection -> mil -> models/errors.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("legionrm.codes", "legionrm.protocol"),  # the one registry of codes, the gateway's wire protocol: import nothing of legionrm's
    ("legionrm.models", "legionrm.errors", "legionrm.homefs", "legionrm.faults", "legionrm.scheduler", "legionrm.version",
     "legionrm.scheduler.ahead", "legionrm.events"),  # legionrm.scheduler and the new packages: their docstring map only
    ("legionrm.mil", "legionrm.tomlio", "legionrm.heartbeat", "legionrm.events.triggers", "legionrm.testing",
     "legionrm.state", "legionrm.metrics", "legionrm.auth", "legionrm.objstate",
     "legionrm.client"),  # client: models/errors, homefs and HTTP only
    # auth: models/errors only; objstate: its pure store and hooks
    ("legionrm.collection", "legionrm.naming", "legionrm.objstate.actor", "legionrm.events.actor"),
    ("legionrm.hostobj", "legionrm.enactor"),
    ("legionrm.scheduler.entry",),  # one request and its states' rules (the book holds them)
    ("legionrm.scheduler.book",),  # the request book's parts (its base classes)
    ENGINES[:3] + ("legionrm.scheduler.planning.pipeline", "legionrm.scheduler.ports", "legionrm.scheduler.requests",
                   "legionrm.scheduler.confirm", "legionrm.scheduler.replan", "legionrm.scheduler.grow"),
    ("legionrm.scheduler.priority",  # the site's order over the book's entries (the queue and config read it)
     "legionrm.scheduler.depend"),  # dependencies, begin_at, arrays, requeue over the book (the queue reads it)
    ("legionrm.scheduler.watch", "legionrm.scheduler.queue", "legionrm.scheduler.several"),
    ("legionrm.scheduler.elastic", "legionrm.scheduler.planning.snaptables", "legionrm.config", "legionrm.request_file",
     "legionrm.scheduler.planning.window"),
    ("legionrm.scheduler.planning.engine_feed",),
    ("legionrm.scheduler.planning",),
    ("legionrm.scheduler.planner",),
    ("legionrm.scheduler.sharegate", "legionrm.scheduler.ahead.starts", "legionrm.scheduler.backfill"),
    ("legionrm.scheduler.accounts", "legionrm.scheduler.enactment", "legionrm.scheduler.preempt",
     "legionrm.scheduler.intake"),  # the Scheduler's parts (intake: submits and cancels in groups)
    ("legionrm.scheduler.stages",),  # over the enactment
    ("legionrm.scheduler.scheduler",),
    ("legionrm.scheduler.mobility", "legionrm.scheduler.grow.actor",
     "legionrm.scheduler.remote"),  # remote: the Scheduler's ports over Ray (its shell's adapters)
    ("legionrm.scheduler.door", "legionrm.scheduler.wiring"),
    ("legionrm.scheduler.audit", "legionrm.scheduler.several.actor"),
    ("legionrm.scheduler.actor", "legionrm.inprocess"),
    ("legionrm.replay",),  # trace replay: over the in-process system
    ("legionrm.system",),
    ("legionrm.gateway",),  # the front door: over the control plane (system), under the CLI
    ("legionrm.cli",),
    ("legionrm",),  # the root package: the public surface, above all it re-exports
)

EXACT = ("legionrm", "legionrm.scheduler", "legionrm.scheduler.ahead", "legionrm.events")
"""Packages placed by their ``__init__`` alone: a new module inside them needs a layer of its own."""

RAY_SHELLS = ("legionrm.system", "legionrm.naming", "legionrm.hostobj.ray_node", "legionrm.cli",
              "legionrm.metrics", "legionrm.gateway.control")
"""Besides every ``*.actor`` module: where Ray may be imported."""

LAZY = {
    ("legionrm.cli.shell", "prompt_toolkit"): "a terminal library only for the interactive shell",
    ("legionrm.cli.shell", "prompt_toolkit.completion"): "same",
    ("legionrm.cli.shell", "prompt_toolkit.history"): "same",
    ("legionrm.cli.simulate", "matplotlib"): "an optional plotting library, only for `simulate --plot`",
    ("legionrm.cli.simulate", "matplotlib.pyplot"): "same",
    ("legionrm.cli.front.cluster", "legionrm.collection.answering"): "pydantic models, only for an administrator's `status`",
    ("legionrm.cli.front.cluster", "legionrm.models"): "same",
    ("legionrm.cli.front.connect", "legionrm.client.client"): "the typed Client (pydantic), only for the queue verbs and views",
    ("legionrm.cli.front.queue", "legionrm.client.errors"): "same",
    # a CLI call through the gateway imports only what it uses (issue 29 item 2, benchmarks/bench_cli.py)
    ("legionrm.cli", "datetime"): "only `history --since/--until` reads a date",
    ("legionrm.cli.front.requests", "csv"): "only `history --csv` writes CSV",
    ("legionrm.client.credentials", "hashlib"): "only an https gateway's certificate is fingerprinted",
    ("legionrm.client.credentials", "pathlib"): "only to write a credentials file, or for candidates()",
    ("legionrm.client.credentials", "legionrm.homefs"): "same; and the login name, only when no own file is there",
    ("legionrm.client.credentials", "tomllib"): "only for a credentials file not in the form text() writes",
    ("legionrm.client.signing", "cryptography.hazmat.bindings._rust"): "the key, made when a call is signed",
    ("legionrm.client.signing", "cryptography.hazmat.primitives.asymmetric.ed25519"): "same, without the binding",
    ("legionrm.client.signing", "urllib.parse"): "only to sign a request object (httpx's), never on a CLI call",
    ("legionrm.client.signing", "nacl.bindings"): "libsodium, only for the typed Client's signer (its import costs a CLI call more than it saves)",
    ("legionrm.client.wire", "ssl"): "only an https gateway's calls",
    ("legionrm.scheduler.grow.actor", "ray.autoscaler.sdk"): "Ray's autoscaler client (click, yaml): only a cluster that grows asks it",
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
    """No two modules import each other, directly or through others."""
    return [" <-> ".join(c) for c in cycles(internal_edges(mods))]


def package_cycles(mods: dict[str, Module], base: str) -> list[str]:
    """The import cycles among the packages directly under ``base`` (a module
    there counts as a package of its own), each named by its members and the
    imports that close it."""
    edges = internal_edges(mods)
    return [" <-> ".join(c) + " (" + "; ".join(crossings(edges, base, c)) + ")"
            for c in cycles(package_edges(edges, base))]


def rule_top_package_cycles(mods: dict[str, Module]) -> list[str]:
    """No two packages (or modules) directly under ``legionrm`` import each
    other, directly or through others, counting every module inside each."""
    return package_cycles(mods, "legionrm")


def rule_scheduler_package_cycles(mods: dict[str, Module]) -> list[str]:
    """Likewise for the parts of ``legionrm.scheduler``: its sub-packages
    (``ahead``, ``planning``, the engines) and its own modules."""
    return package_cycles(mods, "legionrm.scheduler")


def rule_hostobj_below_scheduler(mods: dict[str, Module]) -> list[str]:
    """No module of ``legionrm.hostobj`` imports anything of ``legionrm.scheduler``
    (at run time; an import under ``TYPE_CHECKING`` does not count)."""
    return [f"{m.name} imports {t}" for m in mods.values() if under(m.name, "legionrm.hostobj")
            for t in sorted(m.imports) if under(t, "legionrm.scheduler")]


def rule_ray(mods: dict[str, Module]) -> list[str]:
    """Only the shells (every ``*.actor`` module and :data:`RAY_SHELLS`) import ``ray``."""
    return [
        f"{m.name} imports {t}"
        for m in mods.values()
        if not (m.name.endswith(".actor") or any(under(m.name, s) for s in RAY_SHELLS))
        for t in sorted(m.imports)
        if under(t, "ray")
    ]


def rule_layers(mods: dict[str, Module]) -> list[str]:
    """A module imports only modules of its own :data:`LAYERS` group or of a lower layer."""
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
    """No module outside ``legionrm.cli`` imports it."""
    return [f"{m.name} imports {t}" for m in mods.values() if not under(m.name, "legionrm.cli")
            for t in sorted(m.imports) if under(t, "legionrm.cli")]


def rule_mil_alone(mods: dict[str, Module]) -> list[str]:
    """MIL imports nothing of legionrm but itself and the error tree (never the Collection)."""
    return [f"{m.name} imports {t}" for m in mods.values() if under(m.name, "legionrm.mil")
            for t in sorted(m.imports)
            if under(t, "legionrm") and not (under(t, "legionrm.mil") or t == "legionrm.errors")]


def rule_inner_imports(mods: dict[str, Module]) -> list[str]:
    """No import inside a function, but those :data:`LAZY` lists with their reason."""
    return [f"{m.name}:{line} imports {t} inside a function" for m in mods.values() for line, t in m.inner
            if (m.name, t) not in LAZY]


RULES = {
    "no import cycle among modules": rule_cycles,
    "no import cycle among the packages under legionrm": rule_top_package_cycles,
    "no import cycle among the parts of legionrm.scheduler": rule_scheduler_package_cycles,
    "hostobj never imports scheduler": rule_hostobj_below_scheduler,
    "ray only in the actor modules and RAY_SHELLS": rule_ray,
    "a module imports only its own LAYERS group or lower ones": rule_layers,
    "outside an engine only the engine's package is imported": rule_engine_surface,
    "nothing outside cli imports cli": rule_no_cli_below,
    "mil imports only itself and errors": rule_mil_alone,
    "no imports inside functions but LAZY": rule_inner_imports,
}
"""Each rule by the test id that names it; each returns what breaks it (empty: kept)."""


@pytest.fixture(scope="module")
def legionrm_modules() -> dict[str, Module]:
    return read_package(ROOT)


@pytest.mark.parametrize("rule", list(RULES), ids=list(RULES))
def test_legionrm_keeps_the_rule(rule: str, legionrm_modules: dict[str, Module]) -> None:
    """legionrm breaks none of :data:`RULES` (the id names the rule)."""
    assert RULES[rule](legionrm_modules) == []


def test_every_module_has_a_layer(legionrm_modules: dict[str, Module]) -> None:
    """Every module of legionrm falls in a group of :data:`LAYERS` (a new one must be placed)."""
    for name in legionrm_modules:
        group(name)


MAX_LINES = 550
"""The house rule splits a file past about 500 lines; the test fails past 550,
the margin a module may grow before its split is due."""
MAX_MODULES = 16
"""The most modules (``__init__.py`` not counted) one folder holds: hostobj has 16."""


def test_no_module_over_550_lines_and_no_folder_over_16_modules(legionrm_modules: dict[str, Module]) -> None:
    """No module of legionrm is longer than :data:`MAX_LINES` lines, and no
    folder holds more than :data:`MAX_MODULES` modules besides its ``__init__.py``."""
    long = {m.name: n for m in legionrm_modules.values()
            if (n := len(m.path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}
    folders: dict[Path, int] = {}
    for m in legionrm_modules.values():
        if m.path.name != "__init__.py":
            folders[m.path.parent] = folders.get(m.path.parent, 0) + 1
    assert {str(f): n for f, n in folders.items() if n > MAX_MODULES} == {}


# --- the rules bite: each made-up package breaks one rule ------------------------------

PACKAGE_CYCLE = {
    "legionrm/mil/a.py": "from legionrm.collection.b import x\n",
    "legionrm/collection/b.py": "",
    "legionrm/collection/c.py": "from legionrm.mil.d import y\n",
    "legionrm/mil/d.py": "",
}
"""Two packages in a cycle whose modules are in none: mil.a -> collection.b, collection.c -> mil.d."""

BROKEN = {
    "no import cycle among modules": {
        "legionrm/mil/a.py": "from legionrm.mil import b\n",
        "legionrm/mil/b.py": "from legionrm.mil.a import x\n",
    },
    "no import cycle among the packages under legionrm": PACKAGE_CYCLE,
    "no import cycle among the parts of legionrm.scheduler": {
        "legionrm/scheduler/ahead/starts.py": "from legionrm.scheduler.planner import keys_of\n",
        "legionrm/scheduler/planner.py": "from legionrm.scheduler.ahead.window import ahead_of\n",
        "legionrm/scheduler/ahead/window.py": "",
    },
    "hostobj never imports scheduler": {"legionrm/hostobj/host.py": "from legionrm.scheduler import ahead\n",
                                        "legionrm/scheduler/ahead/__init__.py": ""},
    "ray only in the actor modules and RAY_SHELLS": {"legionrm/mil/a.py": "import ray\n"},
    "a module imports only its own LAYERS group or lower ones": {"legionrm/collection/a.py": "from legionrm.scheduler.scheduler import Scheduler\n",
                           "legionrm/scheduler/scheduler.py": ""},
    "outside an engine only the engine's package is imported": {
        "legionrm/scheduler/placement/base.py": "",
        "legionrm/scheduler/pools/gate.py": "from legionrm.scheduler.placement.base import Placer\n",
    },
    "nothing outside cli imports cli": {"legionrm/system.py": "from legionrm.cli import main\n",
                                      "legionrm/cli/__init__.py": ""},
    "mil imports only itself and errors": {"legionrm/mil/a.py": "from legionrm.collection import table\n",
                         "legionrm/collection/table.py": ""},
    "no imports inside functions but LAZY": {"legionrm/mil/a.py": "def f():\n    from legionrm.mil import b\n",
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
    """The rule the id names reports the made-up package of :data:`BROKEN` that breaks it."""
    mods = _package(tmp_path, BROKEN[rule])
    assert RULES[rule](mods) != []


def test_a_package_cycle_is_named_with_the_imports_that_close_it(tmp_path: Path) -> None:
    """A cycle between two packages whose modules form none is caught by the
    package rule alone, and reported with both packages and the imports."""
    mods = _package(tmp_path, PACKAGE_CYCLE)
    assert rule_cycles(mods) == []
    assert rule_top_package_cycles(mods) == [
        "legionrm.collection <-> legionrm.mil "
        "(legionrm.collection.c -> legionrm.mil.d; legionrm.mil.a -> legionrm.collection.b)"]


def test_type_checking_imports_do_not_make_a_cycle(tmp_path: Path) -> None:
    """An import under ``if TYPE_CHECKING:`` is no edge: it cannot close a cycle."""
    mods = _package(tmp_path, {
        "legionrm/mil/a.py": "from legionrm.mil import b\n",
        "legionrm/mil/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from legionrm.mil import a\n",
    })
    assert rule_cycles(mods) == []
