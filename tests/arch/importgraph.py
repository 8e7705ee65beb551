"""The import graph of a package, read from its source with ``ast`` (nothing
is imported), and the house rules checked over it.

An import inside ``if TYPE_CHECKING:`` is left out of the graph: it never
runs, and annotations naming a type across two modules are not a dependency
of either's behaviour.  Every other import counts, wherever it stands; one
inside a function is also reported on its own (:func:`inner_imports`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Module:
    name: str
    path: Path
    imports: set[str] = field(default_factory=set)  # every runtime import: modules of the package, or top names
    inner: list[tuple[int, str]] = field(default_factory=list)  # (line, imported) inside a function


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def read_package(root: Path) -> dict[str, Module]:
    """Every module under the package directory ``root``, with its imports
    resolved to the longest module name the package has (``from a.b import c``
    is ``a.b.c`` when ``c`` is a module, else ``a.b``)."""
    mods: dict[str, Module] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = Module(".".join(parts), path)
    for mod in mods.values():
        tree = ast.parse(mod.path.read_text(encoding="utf-8"))
        is_pkg = mod.path.name == "__init__.py"

        def visit(node: ast.AST, in_function: bool) -> None:
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                for child in node.orelse:
                    visit(child, in_function)
                return
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(mod.name, is_pkg, node)
                for a in node.names:
                    full = f"{base}.{a.name}"
                    targets.append(full if full in mods else base)
            for t in targets:
                mod.imports.add(t)
                if in_function:
                    mod.inner.append((node.lineno, t))
            inside = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            for child in ast.iter_child_nodes(node):
                visit(child, inside)

        visit(tree, False)
    return mods


def internal_edges(mods: dict[str, Module]) -> dict[str, set[str]]:
    """Module -> the package's modules it imports.  Importing ``a.b.c`` also
    runs ``a`` and ``a.b`` (their ``__init__``), so those count too, except a
    module's own ancestors (a package importing its children is not a cycle)."""
    out: dict[str, set[str]] = {}
    for name, mod in mods.items():
        deps: set[str] = set()
        for t in mod.imports:
            parts = t.split(".")
            for i in range(1, len(parts) + 1):
                prefix = ".".join(parts[:i])
                if prefix in mods and prefix != name and not name.startswith(prefix + "."):
                    deps.add(prefix)
        out[name] = deps
    return out


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            strong(v)
    return found


def under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")



def holder(name: str, base: str) -> str | None:
    """The package (or module) directly under ``base`` that holds module
    ``name``: ``holder("a.b.c.d", "a.b") == "a.b.c"``; None outside ``base``."""
    return f"{base}.{name[len(base) + 1:].split('.')[0]}" if name.startswith(base + ".") else None


def package_edges(edges: dict[str, set[str]], base: str) -> dict[str, set[str]]:
    """The import graph one level below the package ``base``: every module
    under ``base`` stands for its :func:`holder`, and one holder imports
    another when any module of the first imports any module of the second.
    Modules outside ``base`` (``base`` itself too) are left out."""
    out: dict[str, set[str]] = {}
    for name, deps in edges.items():
        if (a := holder(name, base)) is not None:
            out.setdefault(a, set()).update(b for d in deps if (b := holder(d, base)) not in (None, a))
    return out


def crossings(edges: dict[str, set[str]], base: str, cycle: list[str]) -> list[str]:
    """The module imports that make ``cycle`` (holders from :func:`package_edges`),
    the first of each pair of holders (by importer, then deepest imported):
    ``a.x -> b.y``."""
    first: dict[tuple[str, str], str] = {}
    for name in sorted(edges):
        for d in sorted(edges[name], key=lambda d: (-d.count("."), d)):
            a, b = holder(name, base), holder(d, base)
            if a in cycle and b in cycle and a != b:
                first.setdefault((a, b), f"{name} -> {d}")
    return [first[k] for k in sorted(first)]
