"""The command line's basics: --version from the one version string, help
on every option, credentials on every user verb, the environment
documented, --cycles 0 refused, shell completion, the examples copied out, counts in the number their noun takes."""

from __future__ import annotations

import argparse
import re
import tomllib
from pathlib import Path

import pytest

import legionrm
from legionrm.cli import COMMANDS, build_parser, main
from legionrm.cli.completion import script
from legionrm.cli.examples import copy_examples
from legionrm.cli.output import counted
from legionrm.version import __version__

ROOT = Path(__file__).resolve().parents[3]


def subparsers() -> dict[str, argparse.ArgumentParser]:
    p = build_parser()
    action = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_version_is_written_once(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"legionrm {__version__}"
    assert legionrm.__version__ == __version__
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "legionrm.version.__version__"}


def test_every_command_is_parsed_and_dispatched() -> None:
    assert set(subparsers()) == set(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_and_argument_has_help(name: str) -> None:
    sp = subparsers()[name]
    missing = [a.dest for a in sp._actions if not a.help]
    assert missing == []
    assert "LEGIONRM_HOME" in (sp.epilog or "")


USER_VERBS = ["submit", "list", "show", "wait", "logs", "explain", "query", "cancel", "hosts", "pools", "status"]


@pytest.mark.parametrize("name", USER_VERBS)
def test_user_verbs_reach_the_gateway_with_credentials(name: str) -> None:
    """A user verb takes the credentials file, --as (admins) and --json; never a Ray address."""
    options = {o for a in subparsers()[name]._actions for o in a.option_strings}
    assert {"--credentials", "--as", "--json"} <= options
    assert COMMANDS[name].startswith(("legionrm.cli.front:", "legionrm.cli.shell:", "legionrm.cli.several."))


def test_up_joins_a_ray_by_address() -> None:
    assert "--address" in {o for a in subparsers()["up"]._actions for o in a.option_strings}


def test_environment_is_documented() -> None:
    assert "LEGIONRM_HOME" in (build_parser().epilog or "")
    assert "LEGIONRM_HOME" in (ROOT / "README.md").read_text()


@pytest.mark.parametrize("bad", ["0", "-1", "two"])
def test_cycles_below_one_refused(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["simulate", "x.toml", "--cycles", bad])
    assert e.value.code == 2 and "--cycles" in capsys.readouterr().err


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_completion_names_every_command_and_option(shell: str) -> None:
    text = script(shell)
    assert "complete -o filenames -F _legionrm legionrm" in text
    for name, sp in subparsers().items():
        assert re.search(rf"\b{name}\b", text)
        for a in sp._actions:
            for o in a.option_strings:
                if o.startswith("--"):
                    assert o in text


def test_examples_copied_out_and_never_overwritten(tmp_path: Path) -> None:
    copied, kept = copy_examples(tmp_path)
    assert "examples/requests/workers.toml" in copied and kept == []
    assert (tmp_path / "examples" / "scenarios" / "ducc_s10_doubling.toml").read_text() == (
        ROOT / "examples" / "scenarios" / "ducc_s10_doubling.toml").read_text()
    (tmp_path / "examples" / "user_program.py").write_text("# mine\n")
    copied, kept = copy_examples(tmp_path)
    assert copied == [] and "examples/user_program.py" in kept
    assert (tmp_path / "examples" / "user_program.py").read_text() == "# mine\n"


def test_packaging_files() -> None:
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert __version__ in (ROOT / "CHANGELOG.md").read_text()
    assert (ROOT / "legionrm" / "py.typed").exists()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["legionrm"]
    assert "py.typed" in data and "data/examples/*/*" in data


@pytest.mark.parametrize("n, noun, plural, expected", [
    (1, "vault", None, "1 vault"),
    (0, "vault", None, "0 vaults"),
    (2, "class", None, "2 classes"),
    (1, "class", None, "1 class"),
    (3, "host group", None, "3 host groups"),
    (2, "box", None, "2 boxes"),
    (2, "policy", "policies", "2 policies"),
], ids=["one", "none", "es-plural", "one-class", "two-words", "x-plural", "given-plural"])
def test_counted(n: int, noun: str, plural: str | None, expected: str) -> None:
    assert counted(n, noun, plural) == expected
