"""The live dashboard: what ``legionrm up`` serves on a web page.

:mod:`legionrm.dashboard.view` is pure: it turns one poll of the running
system (the Collection's records, the Scheduler's requests and status, the
last elastic cycle) into the JSON the page draws.  The web server that polls
the actors (:mod:`legionrm.dashboard.server`) is a Ray shell and is imported
only by the command line.
"""

from legionrm.dashboard.view import Poll, build_view

__all__ = ["Poll", "build_view"]
