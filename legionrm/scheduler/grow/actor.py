"""The Ray side of :mod:`legionrm.scheduler.grow`: the autoscaler's
``request_resources``, and the grower a scheduler runs with when the cluster
file turns ``[autoscaler]`` on."""

from __future__ import annotations

from legionrm.models import ClusterSpec
from legionrm.scheduler.grow import Bundle, Grower


def request_resources(bundles: list[Bundle]) -> None:
    """Ask Ray's autoscaler for room for ``bundles`` (replacing any earlier ask)."""
    from ray.autoscaler.sdk import request_resources as ask  # imported when asked: the autoscaler's sdk is heavy

    ask(bundles=bundles)


def grower_for(cluster: ClusterSpec) -> Grower | None:
    """The scheduler's grower: one asking Ray's autoscaler when ``[autoscaler] enabled``, else None."""
    if not cluster.autoscaler.enabled:
        return None
    return Grower(request_resources, cluster.autoscaler.max_bundles)
