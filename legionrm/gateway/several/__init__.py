"""The gateway's routes about a system's several schedulers (issue 27).

* ``schedulers``: which scheduler a request goes to, finding a request
  whichever scheduler holds it, ``GET /schedulers``, and drain / resume of a host;
* ``reload``: live reconfiguration, ``POST /reload`` and ``POST /pools``.

Their rows are in the one route table, :mod:`legionrm.gateway.routes`.
"""
