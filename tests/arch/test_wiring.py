"""One wiring (issue 23): the Scheduler is built in one place, from few
arguments, with nothing hooked in afterwards, and its class stays small.

Checked on the source (no import), each rule also run on a made-up snippet
to show it fails when broken:

- ``Scheduler.__init__`` takes at most :data:`MAX_ARGS` arguments;
- the Scheduler's public surface (its public methods and properties and the
  public attributes its ``__init__`` sets) is at most :data:`MAX_PUBLIC`
  names: what grows past that is split into its parts (queue, accounts,
  enactment) instead;
- no module of the package but :data:`WIRING` calls ``Scheduler(...)``, and
  the Ray shell and the in-process system call ``wire``;
- no module of the package or its tests assigns an attribute of a scheduler
  object (``scheduler.on_finish = ...``, ``self.core.x = ...`` in the
  shell): a collaborator is a constructor argument (a test that needs other
  settings passes them: ``LocalSystem(spec, settings=...)``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "legionrm"
TESTS = ROOT.parent / "tests"
SCHEDULER = ROOT / "scheduler" / "scheduler.py"
WIRING = ROOT / "scheduler" / "wiring.py"
CALLERS = (ROOT / "scheduler" / "actor.py", ROOT / "inprocess.py")
"""The two places a whole system is built: each calls ``wire``."""
MAX_ARGS = 12
MAX_PUBLIC = 25
SCHEDULER_NAMES = frozenset({"scheduler", "sched"})
"""Names a scheduler object goes by in the package (``self.core`` in the Ray shell)."""


def _class(source: str, name: str) -> ast.ClassDef:
    return next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef) and n.name == name)


def init_args(cls: ast.ClassDef) -> int:
    """How many arguments ``cls.__init__`` takes (``self`` aside; ``*args`` and ``**kw`` count one each)."""
    init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    a = init.args
    return len(a.posonlyargs) + len(a.args) - 1 + len(a.kwonlyargs) + (a.vararg is not None) + (a.kwarg is not None)


def public_surface(cls: ast.ClassDef) -> list[str]:
    """The public methods and properties of ``cls`` and the public attributes its ``__init__`` sets."""
    names = [n.name for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
             and not n.name.startswith("_")]
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    for node in ast.walk(init) if init is not None else ():
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AnnAssign, ast.AugAssign)) else []
        for t in targets:
            for e in t.elts if isinstance(t, ast.Tuple) else [t]:
                if (isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "self"
                        and not e.attr.startswith("_") and e.attr not in names):
                    names.append(e.attr)
    return names


def constructs_scheduler(source: str) -> list[int]:
    """The lines of ``source`` that call ``Scheduler(...)``."""
    return [n.lineno for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call) and (
        (isinstance(n.func, ast.Name) and n.func.id == "Scheduler")
        or (isinstance(n.func, ast.Attribute) and n.func.attr == "Scheduler"))]


def calls(source: str, name: str) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name
               for n in ast.walk(ast.parse(source)))


def _is_scheduler(node: ast.expr, shell: bool) -> bool:
    if isinstance(node, ast.Name):
        return node.id in SCHEDULER_NAMES
    if isinstance(node, ast.Attribute):
        return node.attr in SCHEDULER_NAMES or (shell and node.attr == "core" and isinstance(node.value, ast.Name)
                                                and node.value.id == "self")
    return False


def hooks_set(source: str, shell: bool = False) -> list[str]:
    """``line: target`` of every assignment to an attribute of a scheduler
    object (``shell``: ``self.core`` is one too)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AnnAssign, ast.AugAssign)) else []
        for t in targets:
            for e in t.elts if isinstance(t, ast.Tuple) else [t]:
                if isinstance(e, ast.Attribute) and _is_scheduler(e.value, shell):
                    out.append(f"{node.lineno}: {ast.unparse(e)}")
    return out


def _modules(*roots: Path) -> list[Path]:
    return sorted(p for r in roots or (ROOT,) for p in r.rglob("*.py"))


# --- the package keeps the rules ----------------------------------------------------------


def test_the_scheduler_takes_at_most_twelve_arguments() -> None:
    assert init_args(_class(SCHEDULER.read_text(), "Scheduler")) <= MAX_ARGS


def test_the_scheduler_shows_at_most_25_public_names() -> None:
    surface = public_surface(_class(SCHEDULER.read_text(), "Scheduler"))
    assert len(surface) <= MAX_PUBLIC, sorted(surface)


def test_only_the_wiring_constructs_a_scheduler() -> None:
    found = {str(p.relative_to(ROOT)): lines for p in _modules() if p != WIRING
             and (lines := constructs_scheduler(p.read_text(encoding="utf-8")))}
    assert found == {}
    assert constructs_scheduler(WIRING.read_text())  # and the wiring does


@pytest.mark.parametrize("path", CALLERS, ids=[p.name for p in CALLERS])
def test_the_shell_and_the_inprocess_system_call_the_wiring(path: Path) -> None:
    assert calls(path.read_text(), "wire")


def test_nothing_is_hooked_into_a_scheduler_after_construction() -> None:
    found = {str(p.relative_to(ROOT.parent)): hooks for p in _modules(ROOT, TESTS)
             if (hooks := hooks_set(p.read_text(encoding="utf-8"), shell=p.name == "actor.py"))}
    assert found == {}


# --- the rules bite: each made-up snippet breaks one -----------------------------------------


def _made_up_scheduler(args: int, methods: int, attrs: int) -> ast.ClassDef:
    params = "".join(f", a{i}" for i in range(args))
    body = "".join(f"        self.x{i} = a0\n" for i in range(attrs)) or "        pass\n"
    body += "        self._private = 0\n"
    defs = "".join(f"    def m{i}(self): ...\n" for i in range(methods)) + "    def _hidden(self): ...\n"
    return _class(f"class Scheduler:\n    def __init__(self{params}):\n{body}{defs}", "Scheduler")


@pytest.mark.parametrize("args, methods, attrs, too_many_args, too_big", [
    (12, 20, 5, False, False),
    (13, 0, 0, True, False),
    (2, 26, 0, False, True),
    (2, 20, 6, False, True),
], ids=["at-the-limits", "thirteen-arguments", "twenty-six-methods", "twenty-methods-six-attributes"])
def test_the_size_rules_bite(args: int, methods: int, attrs: int, too_many_args: bool, too_big: bool) -> None:
    cls = _made_up_scheduler(args, methods, attrs)
    assert (init_args(cls) > MAX_ARGS) is too_many_args
    assert (len(public_surface(cls)) > MAX_PUBLIC) is too_big


@pytest.mark.parametrize("source, shell, hooks, built", [
    ("s = Scheduler(a, b)\n", False, [], [1]),
    ("import legionrm.scheduler.scheduler as m\ns = m.Scheduler(a)\n", False, [], [2]),
    ("s = wire(settings, ports).scheduler\n", False, [], []),
    ("scheduler = wire(x).scheduler\nscheduler.on_finish = forget\n", False, ["2: scheduler.on_finish"], []),
    ("self.scheduler.activator, y = f, 1\n", False, ["1: self.scheduler.activator"], []),
    ("sched._planner = p\n", False, ["1: sched._planner"], []),
    ("self.core.watch = w\n", True, ["1: self.core.watch"], []),
    ("self.core.watch = w\n", False, [], []),
    ("self.core = wire(s, p).scheduler\nsystem.scheduler = handle\n", True, [], []),
], ids=["constructed", "constructed-through-a-module", "wired", "hook-on-a-local", "hook-in-a-tuple",
        "private-hook", "hook-on-the-shell-core", "core-elsewhere-is-not-a-scheduler", "holding-a-scheduler"])
def test_the_wiring_rules_bite(source: str, shell: bool, hooks: list[str], built: list[int]) -> None:
    assert hooks_set(source, shell) == hooks
    assert constructs_scheduler(source) == built
