"""The import structure of legionrm.mil: imports run one way.

* no ``import`` inside a function body (a deliberately lazy optional
  dependency would carry a ``# lazy:`` comment on its line);
* no cycle among the modules of ``legionrm.mil`` at module level.
"""

from __future__ import annotations

import ast
from pathlib import Path

import legionrm.mil

MIL_DIR = Path(legionrm.mil.__file__).parent
PACKAGE = "legionrm.mil"


def _modules() -> dict[str, ast.Module]:
    out = {}
    for path in sorted(MIL_DIR.glob("*.py")):
        name = PACKAGE if path.stem == "__init__" else f"{PACKAGE}.{path.stem}"
        out[name] = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return out


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    # "from legionrm.mil import values" imports the module legionrm.mil.values
    return [base] + [f"{base}.{a.name}" for a in node.names]


def test_no_import_inside_a_function() -> None:
    found = []
    for name, tree in _modules().items():
        lines = (MIL_DIR / (("__init__" if name == PACKAGE else name.rsplit(".", 1)[1]) + ".py")).read_text().splitlines()
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                for node in ast.walk(fn):
                    if isinstance(node, (ast.Import, ast.ImportFrom)) and "# lazy:" not in lines[node.lineno - 1]:
                        found.append(f"{name}:{node.lineno}")
    assert found == []


def test_no_import_cycle_among_mil_modules() -> None:
    mods = _modules()
    graph: dict[str, set[str]] = {}
    for name, tree in mods.items():
        deps: set[str] = set()
        for node in tree.body:  # module level only (functions hold no imports, see above)
            stmts = [node]
            if isinstance(node, ast.Try):
                stmts = [*node.body, *(s for h in node.handlers for s in h.body)]
            for st in stmts:
                if isinstance(st, (ast.Import, ast.ImportFrom)):
                    deps |= {d for d in _imported(st) if d in mods and d != name}
        graph[name] = deps
    # the package __init__ is the facade: every submodule importing "from
    # legionrm.mil import values" goes through it, so judge submodules alone
    sub = {k: v - {PACKAGE} for k, v in graph.items() if k != PACKAGE}
    state: dict[str, int] = {}
    cycle: list[str] = []

    def visit(n: str, path: list[str]) -> bool:
        state[n] = 1
        for d in sorted(sub[n]):
            if state.get(d) == 1:
                cycle.extend([*path, n, d])
                return True
            if d not in state and visit(d, [*path, n]):
                return True
        state[n] = 2
        return False

    for n in sorted(sub):
        if n not in state and visit(n, []):
            break
    assert cycle == [], " -> ".join(cycle)
    assert "legionrm.mil.vectorize" not in sub["legionrm.mil.vfuncs"]
    assert "legionrm.mil.kernels" in sub["legionrm.mil.vfuncs"]
