"""The Ray side of :mod:`legionrm.scheduler.grow`: Ray autoscaler's
``request_resources``, the port a scheduler asks for nodes through."""

from __future__ import annotations

from legionrm.scheduler.grow import Bundle


def request_resources(bundles: list[Bundle]) -> None:
    """Ask Ray's autoscaler for room for ``bundles`` (replacing any earlier ask)."""
    # imported here: Ray's autoscaler client brings click and yaml, about 0.25 s of CPU
    # that every scheduler's start would pay, and only a cluster that grows calls it
    from ray.autoscaler.sdk import request_resources as ask

    ask(bundles=bundles)
