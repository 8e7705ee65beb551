"""The user verbs, through the front door: each is one or a few signed calls to the gateway.

``submit list show (--follow) wait logs history explain cancel hosts pools status``, the queue's
``hold release update top`` and its views ``share prio`` talk to
the gateway with the user's credentials (``--credentials FILE``, else
``$LEGIONRM_CREDENTIALS``, ``~/.legionrm/credentials``, or on the head the
home's administrator credentials); ``--as USER`` makes an administrator's
call as that user (refused for anyone else).  Every verb has ``--json``.
This package imports neither Ray nor numpy nor rich, so a ``list`` costs
little more than Python's start and one HTTP round trip
(``benchmarks/bench_cli.py``): the verbs print from the gateway's JSON
documents (:class:`~legionrm.client.wire.Wire`), so no pydantic model is
imported either (the Python :class:`~legionrm.client.client.Client` types the
same documents; only the queue's verbs and views, and an administrator's
``status`` line, import it, when they run).

Modules: ``connect`` (the lean Wire or the typed Client, with the user's
credentials), ``lines`` (a request's fields, the plain table), ``submit``,
``requests`` (list, show, wait, logs, history, cancel), ``follow``
(``show --follow``), ``queue`` (hold, release, update, top; share, prio),
``cluster`` (explain, hosts, pools; ``status``'s answering line).  Every
verb and helper is named here too, as ``legionrm.cli.COMMANDS`` and callers
know them (``legionrm.cli.front:cli_submit``).
"""

from legionrm.cli.front.cluster import (
    answering_line,
    cli_explain,
    cli_hosts,
    cli_pools,
    host_lines,
    pool_json,
    pool_lines,
)
from legionrm.cli.front.connect import client, typed
from legionrm.cli.front.follow import ENDING, STATUS_WIDTH, event_line, follow_events
from legionrm.cli.front.lines import columns, ended_line, exit_status, request_json, request_rows, starts
from legionrm.cli.front.queue import cli_prio, cli_queue, cli_share, prio_lines, share_lines
from legionrm.cli.front.requests import (
    HISTORY_FIELDS,
    cli_cancel,
    cli_history,
    cli_list,
    cli_logs,
    cli_show,
    cli_wait,
)
from legionrm.cli.front.submit import cli_submit

__all__ = [
    "ENDING", "HISTORY_FIELDS", "STATUS_WIDTH", "answering_line", "cli_cancel", "cli_explain", "cli_history",
    "cli_hosts", "cli_list", "cli_logs", "cli_pools", "cli_prio", "cli_queue", "cli_share", "cli_show", "cli_submit",
    "cli_wait", "client", "columns", "ended_line", "event_line", "exit_status", "follow_events", "host_lines",
    "pool_json", "pool_lines", "prio_lines", "request_json", "request_rows", "share_lines", "starts", "typed",
]
