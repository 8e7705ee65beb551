"""The verbs about a system's several schedulers and its live changes (issue 27),
through the gateway like :mod:`legionrm.cli.front`'s, and printed from its JSON.

* ``schedulers``: ``legionrm schedulers``, ``drain HOST --reason TEXT``, ``resume HOST``;
* ``reload``: ``legionrm reload [--cluster FILE]``, ``pools create|update|delete``.
"""
