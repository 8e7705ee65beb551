"""Requests whose ``after`` graph follows work that ends start in stages (issue 26, item 6).

- which objects may start now, read from the request and its instances:
  :mod:`legionrm.enactor.after` (the graph, beside the Enactor's rounds);
- :mod:`.advance`: :class:`Stages`, the Scheduler's hook: the first stage at
  the first attempt, each later one as what it follows ends well.

Pure; no Ray.
"""
