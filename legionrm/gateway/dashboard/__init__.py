"""The dashboard, served by the gateway: its pages and the view they draw.

- :mod:`~legionrm.gateway.dashboard.pages`: ``/`` and ``/api/state``, each poll made
  through the gateway's control plane with the same signed calls as the API;
- :mod:`~legionrm.gateway.dashboard.view`: pure: one poll of the running system
  (the Collection's records, the Scheduler's requests and status, the last
  elastic cycle) turned into the JSON the page (``page.html``) draws.
"""
