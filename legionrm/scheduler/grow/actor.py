"""The Ray side of :mod:`legionrm.scheduler.grow`: Ray autoscaler's
``request_resources``, the port a scheduler asks for nodes through."""

from __future__ import annotations

from ray.autoscaler.sdk import request_resources as _ask

from legionrm.scheduler.grow import Bundle


def request_resources(bundles: list[Bundle]) -> None:
    """Ask Ray's autoscaler for room for ``bundles`` (replacing any earlier ask)."""
    _ask(bundles=bundles)
