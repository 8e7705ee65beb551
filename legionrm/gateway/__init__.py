"""The front door: one HTTP API on the head, the only way users reach the system.

- :mod:`~legionrm.gateway.signatures`: the check of each signed call (RFC 9421);
- :mod:`~legionrm.gateway.door`: the middleware on every call and the one error shape;
- :mod:`~legionrm.gateway.app`: the aiohttp application, put together;
- :mod:`~legionrm.gateway.routes`: the one route table (method, path, handler, models) the router and
  the OpenAPI description are both built from;
- :mod:`~legionrm.gateway.routes_requests`, :mod:`~legionrm.gateway.routes_system`,
  :mod:`~legionrm.gateway.routes_users`: the handlers by area;
- :mod:`~legionrm.gateway.plane`: what the routes ask of the control plane (a protocol);
- :mod:`~legionrm.gateway.control`: that protocol over the Ray actors (the one module here importing Ray);
- :mod:`~legionrm.gateway.local`: the same over an in-process system (tests);
- :mod:`~legionrm.gateway.tls`: the self-signed certificate and its fingerprint;
- :mod:`~legionrm.gateway.serve`: serving the application (a thread, a loop);
- :mod:`~legionrm.gateway.process`: the gateway process (``python -m legionrm.gateway``);
- :mod:`~legionrm.gateway.dashboard`: the dashboard's pages and view;  :mod:`~legionrm.gateway.openapi`: the API's
  description.
"""
