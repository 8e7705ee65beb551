"""One registry of codes (``legionrm/codes.py``), checked over the package's source.

- no code is written as a literal outside the registry: no string that looks
  like a code of a registered category (``"request.conflict"``, and a made-up
  ``"request.bogus"`` too) anywhere, and no literal at all where a code goes
  (``code=...``, a Refusal's first argument, ``x.code == ...``);
- every ``codes.NAME`` the package uses is in the registry, and every
  registered code is used somewhere outside it (by the package; one offered
  to owner hooks, by a hook in the tests or examples);
- every constant is named for its string, and ``docs/errors.md`` is exactly
  what the registry generates, so every code is documented.

The scanner reads source with ``ast`` (nothing is imported) and is run on
made-up modules too (``test_the_scanner_bites``), so it is shown to fail."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from legionrm import codes

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "legionrm"
REGISTRY_FILE = PACKAGE / "codes.py"
DOC = REPO / "docs" / "errors.md"

DOTTED = re.compile(r"^[a-z][a-z_]*\.[a-z_]+$")
CATEGORIES = frozenset(e.category for e in codes.REGISTRY.values())
"""A dotted literal in one of these categories is a code; others (``scheduler.db``,
``legionrm.mil``, ``grammar.lark``) are file and module names."""

CODE_ARG = {"Refusal": 0, "AuthRefusedError": 0, "AuditFinding": 0, "Failure": 0, "FilterVerdict": 1,
            "PlacementFailure": 2, "Refused": 1, "refusal": 1, "GatewayError": 0, "ConnectionFailedError": 0,
            "error_for": 1}
"""Calls whose positional argument at that index is a code (every ``code=`` keyword is one too)."""


@dataclass
class Scan:
    """What one module does with codes: literals where none belong, and the
    registry names it reads (``codes.NAME`` or ``from legionrm.codes import NAME``)."""

    literals: list[str] = field(default_factory=list)
    names: set[str] = field(default_factory=set)


def _is_code_name(node: ast.expr) -> bool:
    """``code``, ``x.code``, ``error_code``: an expression holding a code."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name == "code" or name.endswith("_code")


def _code_positions(tree: ast.AST) -> list[ast.expr]:
    """Expressions the source puts where a code goes."""
    out: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            out += [k.value for k in node.keywords if k.arg == "code"]
            fn = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if fn in CODE_ARG and len(node.args) > CODE_ARG[fn]:
                out.append(node.args[CODE_ARG[fn]])
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_is_code_name(s) for s in sides):
                out += [s for s in sides if not _is_code_name(s)]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if _is_code_name(t) and node.value is not None:
                    out.append(node.value)
                elif isinstance(t, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    out += [v for n, v in zip(t.elts, node.value.elts) if _is_code_name(n)]
    return out


def scan(source: str, where: str) -> Scan:
    """Scan one module's source; ``where`` prefixes each finding."""
    tree = ast.parse(source)
    found = Scan()
    positions = _code_positions(tree)
    positions += [e for p in positions if isinstance(p, (ast.Tuple, ast.List, ast.Set)) for e in p.elts]
    for node in positions:
        literal = node.value if isinstance(node, ast.Constant) else None
        if isinstance(node, ast.JoinedStr) or (isinstance(literal, str) and literal):  # "": no code
            found.literals.append(f"{where}:{node.lineno}: {ast.unparse(node)} where a code goes")
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and DOTTED.match(node.value) \
                and node.value.split(".", 1)[0] in CATEGORIES and node not in positions:
            found.literals.append(f"{where}:{node.lineno}: {node.value!r} is a code literal")
    aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "legionrm":
            aliases |= {a.asname or a.name for a in node.names if a.name == "codes"}
        elif isinstance(node, ast.ImportFrom) and node.module == "legionrm.codes":
            found.names |= {a.name for a in node.names}
        elif isinstance(node, ast.Import):
            aliases |= {a.asname for a in node.names if a.name == "legionrm.codes" and a.asname}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            found.names.add(node.attr)
    found.literals = sorted(set(found.literals))
    return found


@pytest.fixture(scope="module")
def scans() -> dict[str, Scan]:
    return {str(p.relative_to(REPO)): scan(p.read_text(encoding="utf-8"), str(p.relative_to(REPO)))
            for p in sorted(PACKAGE.rglob("*.py")) if p != REGISTRY_FILE}


def _constants() -> dict[str, str]:
    """Registry constant name -> the code (or family pattern) it stands for."""
    out: dict[str, str] = {}
    for name, value in vars(codes).items():
        if isinstance(value, codes.Family):
            out[name] = next(k for k in codes.REGISTRY if k.startswith(value.prefix) and k.endswith(">"))
        elif isinstance(value, str) and value in codes.REGISTRY and name.isupper():
            out[name] = value
    return out


def test_no_code_literal_outside_the_registry(scans: dict[str, Scan]) -> None:
    found = [line for s in scans.values() for line in s.literals]
    assert found == [], "use the constants of legionrm/codes.py (register a new code there):\n" + "\n".join(found)


def test_every_code_used_is_registered(scans: dict[str, Scan]) -> None:
    unknown = sorted(f"{where}: codes.{n}" for where, s in scans.items() for n in s.names if not hasattr(codes, n))
    assert unknown == []


def test_every_registered_code_is_used(scans: dict[str, Scan]) -> None:
    """By the package; a code offered to owner hooks at least by a hook in the tests or examples."""
    used = {n for s in scans.values() for n in s.names}
    hooks = {n for folder in ("tests", "examples") for p in (REPO / folder).rglob("*.py")
             for n in scan(p.read_text(encoding="utf-8"), str(p)).names}
    by_code: dict[str, set[str]] = {}
    for name, text in _constants().items():
        by_code.setdefault(text, set()).add(name)
    assert set(by_code) == set(codes.REGISTRY), "every registered code has a constant"
    unused = [c for c, names in by_code.items()
              if not names & (used | hooks if codes.REGISTRY[c].for_hooks else used)]
    assert sorted(unused) == []


def test_constants_are_named_for_their_code() -> None:
    """``request.conflict`` is REQUEST_CONFLICT; ``busy`` in ``placement`` is PLACEMENT_BUSY (families aside)."""
    def expected(entry: codes.Code) -> str:
        name = entry.code.upper().replace(".", "_")
        return name if entry.code.split(".", 1)[0] == entry.category else f"{entry.category.upper()}_{name}"

    wrong = {n: c for n, c in _constants().items() if not c.endswith(">") and n != expected(codes.REGISTRY[c])}
    assert wrong == {}


def test_docs_errors_md_is_generated_from_the_registry() -> None:
    assert DOC.read_text(encoding="utf-8") == codes.markdown(), \
        "docs/errors.md is stale: python -m legionrm.codes --markdown > docs/errors.md"


def test_every_registered_code_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert [c for c in codes.REGISTRY if f"`{c}`" not in text] == []


# --- the scanner bites -----------------------------------------------------------------------

BITES = [
    pytest.param('Refusal(code="request.bogus", reason="r", by="b")', "literal", id="made-up-code-in-a-refusal"),
    pytest.param('x = "request.conflict"', "literal", id="registered-code-as-a-literal"),
    pytest.param('Refusal(code="busy", reason="r")', "literal", id="one-word-code-where-a-code-goes"),
    pytest.param('Refusal("busy", "r")', "literal", id="positional-code"),
    pytest.param('FilterVerdict(keep, "gone", "r")', "literal", id="filter-verdict-code"),
    pytest.param('Refusal(code=f"resource.{kind}", reason="r")', "literal", id="f-string-code"),
    pytest.param('ok = failure.code == "not_enough"', "literal", id="compared-with-a-literal"),
    pytest.param('code, reason = "nope", "r"', "literal", id="tuple-assigned"),
    pytest.param('ok = refusal.code in ("capacity", other)', "literal", id="compared-with-a-tuple"),
    pytest.param("from legionrm import codes\ncodes.REQUEST_BOGUS", "unknown", id="unregistered-constant"),
]

CLEAN = [
    pytest.param('path = "scheduler.db"', id="file-name"),
    pytest.param('log = logging.getLogger("legionrm.mil")', id="module-name"),
    pytest.param("from legionrm import codes\nRefusal(code=codes.REQUEST_CONFLICT, reason='r')", id="constant"),
    pytest.param("Refusal(code=other.code, reason='r')", id="passed-on"),
    pytest.param('state = "busy"', id="a-word-that-is-no-code-here"),
]


@pytest.mark.parametrize(("source", "kind"), BITES)
def test_the_scanner_bites(source: str, kind: str) -> None:
    found = scan(source, "made_up.py")
    if kind == "literal":
        assert found.literals
    else:
        assert {n for n in found.names if not hasattr(codes, n)} == {"REQUEST_BOGUS"}


@pytest.mark.parametrize("source", CLEAN)
def test_the_scanner_leaves_other_strings_alone(source: str) -> None:
    assert scan(source, "made_up.py").literals == []


@pytest.mark.parametrize("bad", ["Request.x", "a.b.c", "", "request."],
                         ids=["capital", "two-dots", "empty", "no-reason"])
def test_the_registry_refuses_a_malformed_code(bad: str) -> None:
    with pytest.raises(ValueError, match="not a code"):
        codes.code(bad, "made up")


def test_the_registry_refuses_a_code_defined_twice() -> None:
    with pytest.raises(ValueError, match="defined twice"):
        codes.code(codes.REQUEST_CONFLICT, "again")
