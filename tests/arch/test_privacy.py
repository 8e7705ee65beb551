"""No reach-ins (DESIGN.md, "Rules of the house"): only a class touches its
own private attributes, and only a module its own private names.  A
collaborator that needs something gets a public method or a read-only view.

A reach-in is, anywhere under ``legionrm/`` (read with ``ast``; nothing is
imported):

* ``X._name`` where ``X`` is not ``self``, ``cls`` or ``super()``: another
  object's private attribute, or another module's private name
  (``module._name``; a module never names itself, so every one counts);
* ``getattr/setattr/hasattr/delattr(X, "_name")`` on such an ``X`` (the same
  reach, spelled as a string);
* ``from module import _name``: another module's private name.

Dunder names (``__dict__``, ``__module__``...) are Python's protocol, not
anybody's private state, and are not counted.  The few exceptions are listed
in :data:`ALLOWED` with their reason, and each carries a ``# reach-in:``
comment at its site saying the same; ``test_rule_bites`` shows the checker
failing on made-up code.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "legionrm"
OWN = ("self", "cls")
BY_NAME = ("getattr", "setattr", "hasattr", "delattr")
MAX_ALLOWED = 10

ALLOWED: dict[tuple[str, str], str] = {
    ("legionrm/cli/completion.py", "parser._actions"):
        "argparse has no public walk over its parser tree; the completion script is made from it",
    ("legionrm/system/driver.py", "ray._private"):
        "Ray has no public hook for the raylet's notes it prints on a command's stdout",
    ("legionrm/system/driver.py", "getattr(handle, '_actor_id', id(handle))"):
        "a Ray actor handle has no public id; the signer cache keys on it without holding the handle",
}
"""(path, expression) -> why this one reach-in stays.  Each is into a library
where no public way exists (or the public name has an underscore); none is
into legionrm's own code."""


@dataclass(frozen=True)
class Site:
    path: str
    line: int
    expr: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.expr}"


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__")) and name != "_"


def _own(node: ast.expr) -> bool:
    """``self``, ``cls`` or ``super()``: the object or class whose method this is."""
    if isinstance(node, ast.Name):
        return node.id in OWN
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def reach_ins(tree: ast.AST, path: str) -> list[Site]:
    """Every reach-in in the parsed module ``tree`` (see the module doc), in line order."""
    out: list[Site] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr) and not _own(node.value):
            out.append(Site(path, node.lineno, ast.unparse(node)))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in BY_NAME
              and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
              and isinstance(node.args[1].value, str) and _private(node.args[1].value)
              and not _own(node.args[0])):
            out.append(Site(path, node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if _private(alias.name):
                    source = "." * node.level + (node.module or "")
                    out.append(Site(path, node.lineno, f"from {source} import {alias.name}"))
    return sorted(out, key=lambda s: (s.line, s.expr))


def package_reach_ins(root: Path = PACKAGE) -> list[Site]:
    """Every reach-in in every module under ``root``, paths relative to the checkout."""
    out: list[Site] = []
    for p in sorted(root.rglob("*.py")):
        out += reach_ins(ast.parse(p.read_text(encoding="utf-8")), p.relative_to(root.parent).as_posix())
    return out


def stray(sites: list[Site], allowed: dict[tuple[str, str], str]) -> list[Site]:
    """The sites no allow-list entry covers (an entry covers its expression in its file)."""
    return [s for s in sites if (s.path, s.expr) not in allowed]


@pytest.fixture(scope="module")
def sites() -> list[Site]:
    return package_reach_ins()


def test_no_reach_ins_beyond_the_allowed(sites: list[Site]) -> None:
    found = stray(sites, ALLOWED)
    assert not found, f"{len(found)} reach-in(s) into private state (give the owner a public method or view):\n" + \
        "\n".join(map(str, found))


def test_the_allowed_are_few_used_and_said_at_their_site(sites: list[Site]) -> None:
    allowed_sites = [s for s in sites if s not in stray(sites, ALLOWED)]
    assert len(allowed_sites) <= MAX_ALLOWED, "\n".join(map(str, allowed_sites))
    unused = set(ALLOWED) - {(s.path, s.expr) for s in allowed_sites}
    assert unused == set(), "allow-list entries that match nothing (remove them)"
    silent = [s for s in allowed_sites
              if "# reach-in:" not in (ROOT / s.path).read_text(encoding="utf-8").splitlines()[s.line - 1]]
    assert silent == [], "allowed reach-ins without a '# reach-in: <why>' comment on their line:\n" + \
        "\n".join(map(str, silent))
    assert all(reason.strip() for reason in ALLOWED.values())


# --- the checker bites: made-up code ------------------------------------------------------

MADE_UP = '''
import os
from legionrm.mil.values import _strict, strict
from . import _helper

class Owner:
    def __init__(self, other):
        self._mine = 1               # own: fine
        self.__class__               # dunder: fine
        super()._setup()             # own: fine
        other._theirs = 2            # reach-in
        self._mine._inner            # reach-in: into the object held, not into self

    @classmethod
    def make(cls):
        return cls._registry         # own: fine

def helper(thing):
    os._exit(0)                      # reach-in (a module's private name)
    getattr(thing, "_hidden", None)  # reach-in, spelled as a string
    getattr(thing, "public")         # fine
    return thing.__dict__            # dunder: fine
'''


def test_rule_bites() -> None:
    found = reach_ins(ast.parse(MADE_UP), "made_up.py")
    assert [str(s) for s in found] == [
        "made_up.py:3: from legionrm.mil.values import _strict",
        "made_up.py:4: from . import _helper",
        "made_up.py:11: other._theirs",
        "made_up.py:12: self._mine._inner",
        "made_up.py:19: os._exit",
        "made_up.py:20: getattr(thing, '_hidden', None)",
    ]
    assert stray(found, {}) == found
    allowed = {("made_up.py", "os._exit"): "the stdlib's documented exit"}
    assert [s.expr for s in stray(found, allowed)] == [s.expr for s in found if s.expr != "os._exit"]


def test_an_allowed_expression_elsewhere_is_still_a_reach_in() -> None:
    found = reach_ins(ast.parse("import os\nos._exit(0)\n"), "legionrm/other.py")
    assert stray(found, ALLOWED) == found
