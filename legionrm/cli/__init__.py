"""The ``legionrm`` command.

Each subcommand's work lives in the module that owns the concept; this file
only parses arguments and hands any failure to :mod:`legionrm.cli.errors`
(one clean line on stderr, or a JSON object under ``--json``; exit 2).
Offline commands (simulate, place, pools, ``query --cluster``, examples)
never start Ray.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
import time

from legionrm.cli.errors import describe
from legionrm.cli.submitflags import add_submit_flags
from legionrm.version import __version__

TYPE_CHECKING = False  # typing's, without importing typing: a CLI call never loads it
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

# subcommand -> "module:function"; the function takes the parsed args and
# returns an exit status.  Imported lazily so `legionrm place` never pays for Ray.
COMMANDS: dict[str, str] = {
    "demo": "legionrm.cli.demo:cli_main",
    "up": "legionrm.cli.updown:cli_up",
    "down": "legionrm.cli.updown:cli_down",
    "status": "legionrm.cli.several.status:cli_status",
    "query": "legionrm.cli.shell:cli_query",
    "shell": "legionrm.cli.shell:cli_shell",
    "submit": "legionrm.cli.front:cli_submit",
    "list": "legionrm.cli.front:cli_list",
    "wait": "legionrm.cli.front:cli_wait",
    "logs": "legionrm.cli.front:cli_logs",
    "hosts": "legionrm.cli.front:cli_hosts",
    "audit": "legionrm.cli.audit:cli_audit",
    "show": "legionrm.cli.front:cli_show",
    "cancel": "legionrm.cli.front:cli_cancel",
    "deactivate": "legionrm.cli.requests:cli_move",
    "activate": "legionrm.cli.requests:cli_move",
    "migrate": "legionrm.cli.requests:cli_move",
    "explain": "legionrm.cli.front:cli_explain",
    "simulate": "legionrm.cli.simulate:cli_main",
    "place": "legionrm.cli.place:cli_main",
    "pools": "legionrm.cli.front:cli_pools",
    "examples": "legionrm.cli.examples:cli_main",
    "completion": "legionrm.cli.completion:cli_main",
    "user": "legionrm.cli.users:cli_user",
    "history": "legionrm.cli.front:cli_history",
    "hold": "legionrm.cli.front:cli_queue",
    "release": "legionrm.cli.front:cli_queue",
    "update": "legionrm.cli.front:cli_queue",
    "top": "legionrm.cli.front:cli_queue",
    "share": "legionrm.cli.front:cli_share",
    "prio": "legionrm.cli.front:cli_prio",
    "schedulers": "legionrm.cli.several.schedulers:cli_schedulers",
    "drain": "legionrm.cli.several.schedulers:cli_drain",
    "resume": "legionrm.cli.several.schedulers:cli_drain",
    "reload": "legionrm.cli.several.reload:cli_reload",
}

OFFLINE: dict[str, tuple[str, str]] = {
    "pools": ("file", "legionrm.cli.pools:cli_main"),
}
"""A verb that, given this argument, runs another way: offline on a file, or on Ray as the service."""

ENVIRONMENT = """\
environment:
  LEGIONRM_CREDENTIALS  your credentials file (else --credentials FILE, else ~/.legionrm/credentials,
                  else, on the head, the home's auth/users/$LEGIONRM_USER.credentials that `up` writes)
  LEGIONRM_HOME   where `up` keeps its state (up.json), logs (logs/), users (auth/) and gateway.json; default ~/.legionrm
  LEGIONRM_USER   the administrator `up` and `user` act as; default the login name
  RAY_AUTH_MODE   `up` starts Ray with token authentication (RAY_AUTH_MODE=token, the token 0600 in the home)
                  unless --no-ray-token; tests and the in-process tools use "disabled"
  COLUMNS         the width tables fit (default: the terminal's; piped: as wide as needed)

exit status: 0 done, 1 a request was refused (submit), 2 an error (one line, or a
JSON object under --json), 130 interrupted."""

JSON_HELP = "print the answer (and any error) as JSON on stdout"
ADDRESS_HELP = "the Ray address of a running system (default: the one `legionrm up` started)"


CREDENTIALS_HELP = "your credentials file (default: $LEGIONRM_CREDENTIALS, ~/.legionrm/credentials, the home's)"


def gateway_flags(sp: argparse.ArgumentParser) -> None:
    """The flags of every verb that goes through the gateway."""
    sp.add_argument("--credentials", metavar="FILE", help=CREDENTIALS_HELP)
    sp.add_argument("--as", dest="as_user", metavar="USER", help="act as USER (administrators only; refused for others)")
    sp.add_argument("--json", action="store_true", help=JSON_HELP)


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """argparse's, given the terminal's width as ``shutil.get_terminal_size`` finds it (``COLUMNS``,
    else the terminal, else 80) without importing shutil, and bz2 and lzma with it, on every run."""

    def __init__(self, prog: str) -> None:
        cols = int(os.environ["COLUMNS"]) if os.environ.get("COLUMNS", "").isdigit() else 0
        if cols <= 0:
            try:
                cols = os.get_terminal_size(sys.__stdout__.fileno()).columns
            except (AttributeError, ValueError, OSError):  # no terminal
                cols = 0
        cols = cols if cols > 0 else 80
        super().__init__(prog, width=cols - 2)  # argparse's own margin


class _Unbuilt:
    """A subcommand's parser left out of this run's (see :func:`build_parser`): what it is given is dropped."""

    def add_argument(self, *args: object, **kw: object) -> None:
        return None

    def add_mutually_exclusive_group(self, *args: object, **kw: object) -> _Unbuilt:
        return self


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command; with ``only`` (a command's name), of that one alone: a run
    parses one command, and building the other two dozen parsers is a good part of a short call."""
    p = argparse.ArgumentParser(prog="legionrm", description="A Legion-style negotiated resource manager on Ray.",
                                epilog=ENVIRONMENT, formatter_class=_Formatter)
    p.add_argument("--version", action="version", version=f"legionrm {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help: str) -> argparse.ArgumentParser:
        if only is not None and name != only:
            return _Unbuilt()  # type: ignore[return-value]
        return sub.add_parser(name, help=help, description=help, epilog=ENVIRONMENT,
                              formatter_class=_Formatter)

    def json_flag(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--json", action="store_true", help=JSON_HELP)

    def address(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--address", help=ADDRESS_HELP)

    d = add("demo", "boot the default cluster on local Ray and run a guided tour")
    d.add_argument("--cluster", help="cluster TOML file (default: the bundled example)")

    up = add("up", "start a system on Ray from a cluster file, detached")
    up.add_argument("--cluster", help="cluster TOML file (default: the bundled example)")
    up.add_argument("--address", help="join an existing Ray cluster at this address instead of starting one")
    up.add_argument("--port", type=int, help="the port of the Ray head `up` starts (default: a free one)")
    up.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                    help="give up (and clean up) after this long (default: %(default)s)")
    up.add_argument("--gateway-host", default="127.0.0.1", metavar="ADDR",
                    help="the address the gateway binds (default %(default)s; any other serves TLS)")
    up.add_argument("--gateway-port", type=int, default=8470, metavar="N",
                    help="the gateway's port (default %(default)s; 0: a free one, the one the credentials "
                         "issued before name when it is free)")
    up.add_argument("--no-dashboard", action="store_true", help="do not serve the dashboard's pages (the API stays)")
    up.add_argument("--no-ray-dashboard", action="store_true",
                    help="leave Ray's own dashboard and metrics export off (a leaner head)")
    up.add_argument("--no-ray-token", dest="ray_token", action="store_false",
                    help="start Ray without its own token authentication (by default RAY_AUTH_MODE=token: only "
                         "processes holding $LEGIONRM_HOME/auth/ray_token (0600) may connect to the cluster)")
    json_flag(up)

    dn = add("down", "stop what `legionrm up` started, and nothing else")
    dn.add_argument("--force", action="store_true",
                    help="stop without asking the system (a stale or half-started `up`), then forget it")
    json_flag(dn)

    st = add("status", "show the running system through the gateway: hosts, instances, requests, pools")
    gateway_flags(st)

    q = add("query", "run one MIL query")
    q.add_argument("expr", help="a MIL expression, e.g. '$cpus >= 8 and $arch == \"x86_64\"'")
    q.add_argument("--cluster", help="answer offline from this cluster file instead of a running system")
    q.add_argument("--class", dest="class_name", help="the calling class (offline)")
    q.add_argument("--all", action="store_true", help="include resources marked unavailable")
    gateway_flags(q)

    sh = add("shell", "interactive MIL shell on the Collection (reads lines from stdin when piped)")
    sh.add_argument("--cluster", help="work offline on this cluster file")
    sh.add_argument("--credentials", metavar="FILE", help=CREDENTIALS_HELP)
    sh.add_argument("--as", dest="as_user", metavar="USER", help="act as USER (administrators only)")

    sm = add("submit", "submit a request file (or - for stdin) through the gateway")
    sm.add_argument("request", help="request TOML file (e.g. examples/requests/workers.toml), or - for stdin")
    sm.add_argument("--set", action="append", metavar="KEY=VALUE",
                    help="override a key of the file, dotted (object.0.count=4; repeatable)")
    sm.add_argument("--id", help="the request's id (default: the file's, else a fresh one)")
    sm.add_argument("--wait", action="store_true", help="block until it ends, print its final state and exit with its work's exit code")
    sm.add_argument("--wait-timeout", type=float, default=600.0, metavar="S", help="give up following after S seconds")
    add_submit_flags(sm)
    gateway_flags(sm)

    au = add("audit", "check the running system's books: requests against their instances, capacity, "
                      "reservations, pool allocations, the durable book against the live one")
    au.add_argument("--repair", action="store_true", help="fix what can be fixed, saying what was done")
    address(au)
    json_flag(au)

    ls = add("list", "requests you may see, oldest first: the live and recent ones (--all: every one kept)")
    ls.add_argument("--user", help="only this user's requests")
    ls.add_argument("--state", choices=["pending", "admitted", "placing", "reserved", "running", "completed", "failed",
                                        "cancelled", "node_lost", "preempted"],
                    help="only requests in this state")
    ls.add_argument("--all", action="store_true",
                    help="every request the history keeps, not only the live and recent ones (1000 a page at most)")
    ls.add_argument("--limit", type=int, metavar="N", help="at most N requests a page (then: --cursor the one it prints)")
    ls.add_argument("--cursor", metavar="C", help="the page after the one that printed this cursor")
    ls.add_argument("--watch", type=float, nargs="?", const=2.0, metavar="S", help="show it again every S seconds (2)")
    ls.add_argument("--format", metavar="FMT", help="one line per request, e.g. '{id} {state} {user}' (list --json's fields)")
    gateway_flags(ls)
    sw = add("show", "one request's history, instances and the vetoes it met")
    sw.add_argument("id", help="the request id")
    sw.add_argument("--follow", action="store_true",
                    help="then print each status change as one line until the request ends (Ctrl-C stops)")
    sw.add_argument("--timeout", type=float, default=None, metavar="S", help="stop following after S seconds")
    gateway_flags(sw)
    wt = add("wait", "wait until a request ends (exit 0 completed, 1 failed or cancelled)")
    wt.add_argument("id", help="the request id")
    wt.add_argument("--timeout", type=float, default=None, metavar="S", help="give up after S seconds")
    gateway_flags(wt)
    lg = add("logs", "a request's output (the tail the runner kept): stdout to stdout, stderr to stderr")
    lg.add_argument("id", help="the request id")
    lg.add_argument("--follow", action="store_true", help="then print what comes until the request ends (Ctrl-C stops)")
    lg.add_argument("--stderr", action="store_true", help="only its stderr (to stdout)")
    lg.add_argument("--instance", metavar="N", help="which instance: its number from 0 in start order, or its id "
                                                    "(default: the only one)")
    gateway_flags(lg)
    ca = add("cancel", "cancel requests: stop their instances, book everything back")
    ca.add_argument("ids", nargs="*", metavar="ID", help="request ids")
    ca.add_argument("--user", help="every request of this user you may cancel")
    ca.add_argument("--state", help="every request in this state you may cancel")
    gateway_flags(ca)
    for name, what in (("hold", "hold pending requests: they wait, unconsidered, until released (yours, or any: admin)"),
                       ("release", "release held requests (yours: only your own hold; admin: any)"),
                       ("top", "put pending requests first in the queue (administrators)"),
                       ("update", "set pending requests' priority or QoS (administrators)")):
        qv = add(name, what)
        qv.add_argument("ids", nargs="+", metavar="ID", help="request ids")
        if name == "update":
            qv.add_argument("--priority", metavar="N", type=_priority,
                            help="a fixed priority replacing the formula's (none: back to the formula)")
            qv.add_argument("--qos", metavar="NAME", help="move it to this QoS")
        gateway_flags(qv)
    sr = add("share", "the fair-share tree: shares, raw and decayed usage, factors (as sshare)")
    gateway_flags(sr)
    pr = add("prio", "each pending request's priority and its factors, in queue order (as sprio)")
    gateway_flags(pr)
    ho = add("hosts", "the hosts you may use: state, cpus, memory, gpus, custom kinds, load, owner policy, pool")
    gateway_flags(ho)
    for name, what, flag in (("deactivate", "save a running object's state to a vault and stop it (it stays, inert)", None),
                             ("activate", "place an inert object anew and restore its state", "--on"),
                             ("migrate", "move a running object to another host, its state kept", "--to")):
        mv = add(name, what)
        mv.add_argument("id", help="the object's id (the id of any instance it was)")
        if flag:
            mv.add_argument(flag, dest="where", default="true", metavar="MIL",
                            help="the host must match this MIL constraint (default: the object's own)")
        address(mv)
        json_flag(mv)
    xp = add("explain", "plan a request file without enacting it: masters, deltas, refusals")
    xp.add_argument("request", help="request TOML file, or - for stdin")
    xp.add_argument("--host", action="append", metavar="NAME",
                    help="also say why this host would or would not be used, by the filter or ranker that decided (repeatable)")
    gateway_flags(xp)

    si = add("simulate", "run the fair-share core over a scenario file, or replay a workload trace (--swf), no Ray")
    si.add_argument("scenario", nargs="?",
                    help="a DUCC scenario TOML file (e.g. examples/scenarios/ducc_s10_doubling.toml)")
    si.add_argument("--swf", metavar="FILE", help="replay this Standard Workload Format trace through the Scheduler")
    si.add_argument("--jobs", type=_positive, metavar="N", help="--swf: the trace's first N jobs")
    si.add_argument("--hosts", type=_positive, metavar="N",
                    help="--swf: simulated hosts (default: enough for the trace's largest job)")
    si.add_argument("--cpus-per-host", type=_positive, default=1, metavar="C", help="--swf: cpus per host (default 1)")
    si.add_argument("--policy", choices=("fcfs", "easy", "site"), default="easy",
                    help="--swf: the queue's policy (default easy)")
    si.add_argument("--starts", metavar="OUT.csv", help="--swf: write job,submit,start,end,procs per job")
    si.add_argument("--cycles", type=_positive, metavar="N",
                    help="cycles to run (default: the scenario's own `cycles`, else its events' last cycle, else 8)")
    si.add_argument("--summary", action="store_true", help="one line per cycle instead of the full tables")
    si.add_argument("--plot", metavar="FILE.png", help="also draw processes per job and per user over the cycles")
    json_flag(si)

    pl = add("place", "place jobs with node buckets over a scenario file (no Ray)")
    pl.add_argument("scenario", help="a placement scenario TOML file (e.g. examples/scenarios/place_seed.toml)")
    json_flag(pl)

    po = add("pools", "the running system's pools; given a FILE, validate pools and admit once (no Ray); "
                      "`pools create|update PATH KIND=RES:LIMIT[:SHARE]... [--default]` or `pools delete PATH` "
                      "change one pool live (administrators)")
    po.add_argument("file", nargs="?", help="a pool file (examples/scenarios/pools_basic.toml) or a cluster file with "
                    "[[pool]] tables: offline; or create, update, delete")
    po.add_argument("rest", nargs="*", metavar="PATH KIND=RES:LIMIT",
                    help="the pool's path, then per kind (cpu, memory MB, disk MB, gpu) reservation:limit[:share]")
    po.add_argument("--default", action="store_true", help="the pool takes requests that name no pool")
    gateway_flags(po)

    sc = add("schedulers", "the system's schedulers: what each serves (nodepools, constraint) and its queue")
    gateway_flags(sc)
    for verb, what in (("drain", "drain a host: it finishes its work and takes no new work (administrators)"),
                       ("resume", "let a drained host take new work again (administrators)")):
        dr = add(verb, what)
        dr.add_argument("host", help="the host's name (as `legionrm hosts` shows it)")
        if verb == "drain":
            dr.add_argument("--reason", required=True, metavar="TEXT", help="why (shown by `legionrm hosts`)")
        gateway_flags(dr)
    rl = add("reload", "apply a cluster file's pools, schedulers, QoS and fair share, and hosts' and vaults' "
                       "policies and access lists to the running system, all or nothing (administrators); "
                       "a refused change changes nothing and says why")
    rl.add_argument("file", nargs="?", metavar="FILE", help="the cluster file (default: the one the system runs)")
    rl.add_argument("--cluster", metavar="FILE", help="the same, as a flag")
    gateway_flags(rl)

    ex = add("examples", "copy the bundled examples (programs, request files, scenarios) into a directory")
    ex.add_argument("dir", help="where to copy them (created; existing files are not overwritten)")
    json_flag(ex)

    hi = add("history", "finished instances, one record each: who, where, when, how it ended, what it used")
    hi.add_argument("--user", help="only this user's (a user sees only their own)")
    hi.add_argument("--since", type=when, metavar="T", help="ended at or after T: epoch seconds, ISO date/time, or 2h, 7d ago")
    hi.add_argument("--until", type=when, metavar="T", help="ended at or before T (as --since)")
    hi.add_argument("--state", choices=END_STATES, help="only instances that ended so")
    hi.add_argument("--credentials", metavar="FILE", help=CREDENTIALS_HELP)
    hi.add_argument("--as", dest="as_user", metavar="USER", help="act as USER (administrators only; refused for others)")
    fmt = hi.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help=JSON_HELP)
    fmt.add_argument("--csv", action="store_true", help="print the records as CSV, one header row")

    us = add("user", "users and their credentials: `user add NAME [--group G] [--admin]`, `user remove NAME`, "
                     "`user list` (administrators add and remove)")
    us.add_argument("action", choices=("add", "remove", "list"),
                    help="add a user (writes their 0600 credentials file), remove one (at once), or list users")
    us.add_argument("name", nargs="?", help="the user to add or remove")
    us.add_argument("--group", action="append", metavar="G", help="a group the user is in (repeatable)")
    us.add_argument("--admin", action="store_true", help="the user is an administrator")
    us.add_argument("--role", action="append", choices=("user", "owner", "admin"), help="a role (repeatable)")
    us.add_argument("--os-user", metavar="ACCOUNT",
                    help="the OS account the user's work runs as (default: the account of the same name)")
    gateway_flags(us)

    co = add("completion", "print a shell completion script: eval \"$(legionrm completion bash)\"")
    co.add_argument("shell", choices=("bash", "zsh"), help="the shell to complete in")
    return p


def _priority(text: str) -> str:
    """``update --priority``: a whole number, or ``none``."""
    if text != "none":
        try:
            int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number (or none)") from None
    return text


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {n}")
    return n


END_STATES = ("completed", "failed", "cancelled", "preempted", "timed_out", "node_lost")
"""The ends an instance's run may have (:data:`legionrm.models.WorkEnd`; a test holds them equal)."""

_AGO = re.compile(r"(\d+(?:\.\d+)?)([smhd])")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def when(text: str) -> float:
    """Seconds since the epoch, from: seconds since the epoch, an ISO date or
    time (local), or an age (``30m``, ``2h``, ``7d`` ago).  A bad one is an
    ``argparse.ArgumentTypeError`` saying what is accepted."""
    if m := _AGO.fullmatch(text.strip()):
        return time.time() - float(m.group(1)) * _UNIT[m.group(2)]
    try:
        return float(text)
    except ValueError:
        pass
    import datetime as dt  # here: only `history --since/--until` reads a date

    try:
        return dt.datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a time: give seconds since the epoch, an ISO date or "
                                         "time (2026-01-31, 2026-01-31T09:00) or an age (30m, 2h, 7d)") from None


def _resolve(spec: str) -> Callable[[argparse.Namespace], int]:
    module, func = spec.split(":")
    return getattr(importlib.import_module(module), func)  # type: ignore[no-any-return]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; its exit status.  A reader that leaves the pipe early
    (``legionrm query ... | head``) ends the command quietly with status 141
    (128 + SIGPIPE, what a shell reports for tools killed by the signal)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(only=argv[0] if argv and argv[0] in COMMANDS else None).parse_args(argv)
    try:
        code = _run(args)
        sys.stdout.flush()  # what is still buffered meets a reader that left here, not at interpreter exit
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush stays quiet
        return 141
    return code


def _run(args: argparse.Namespace) -> int:
    """The command's exit status; a failure is one line (or a JSON answer) and status 2."""
    spec = COMMANDS[args.command]
    if args.command in OFFLINE and getattr(args, OFFLINE[args.command][0], None):
        spec = OFFLINE[args.command][1]
    try:
        return int(_resolve(spec)(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        raise  # main's to handle, as when the final flush meets it
    except Exception as exc:  # noqa: BLE001 -- every failure goes through describe(); a bug re-raises
        failure = describe(exc)
        if failure is None:
            raise
        if getattr(args, "json", False):
            print(failure.json(args.command))
        else:
            print(failure.line(args.command), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
