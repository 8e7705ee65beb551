"""``legionrm completion bash|zsh``: a completion script for the ``legionrm``
command, made from the parser itself (so it never drifts from the options).

    eval "$(legionrm completion bash)"      # in ~/.bashrc
    eval "$(legionrm completion zsh)"       # in ~/.zshrc (through bashcompinit)
"""

from __future__ import annotations

import argparse

from legionrm.cli import build_parser


def words(parser: argparse.ArgumentParser) -> dict[str, list[str]]:
    """Subcommand -> its options ("" -> the subcommands and the top-level options)."""
    out: dict[str, list[str]] = {"": []}
    for action in _actions(parser):
        if callable(getattr(action, "add_parser", None)):  # the subcommands (what add_subparsers returned)
            for name, sp in action.choices.items():
                out[""].append(name)
                out[name] = sorted(o for a in _actions(sp) for o in a.option_strings if o.startswith("--"))
        else:
            out[""].extend(o for o in action.option_strings if o.startswith("--"))
    return out


def _actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return parser._actions  # reach-in: argparse has no public walk over its parser tree


def script(shell: str) -> str:
    w = words(build_parser())
    cases = "\n".join(f'        {name}) opts="{" ".join(opts)}" ;;' for name, opts in w.items() if name)
    body = f'''_legionrm() {{
    local cur cmd opts
    cur="${{COMP_WORDS[COMP_CWORD]}}"
    cmd="${{COMP_WORDS[1]}}"
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=( $(compgen -W "{" ".join(w[""])}" -- "$cur") )
        return
    fi
    case "$cmd" in
{cases}
        *) opts="" ;;
    esac
    if [[ "$cur" == -* ]]; then
        COMPREPLY=( $(compgen -W "$opts" -- "$cur") )
    else
        COMPREPLY=( $(compgen -f -- "$cur") )
    fi
}}
complete -o filenames -F _legionrm legionrm
'''
    if shell == "zsh":
        body = "autoload -U +X bashcompinit && bashcompinit\n" + body
    return body


def cli_main(args: argparse.Namespace) -> int:
    print(script(args.shell), end="")
    return 0
