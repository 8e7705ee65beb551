"""What a live reconfiguration (``legionrm reload``) sends to the actors it changes.

* :class:`SitePolicySpec`: the site policy of a cluster file (its ``[[qos]]``
  tables, each class's default QoS, the site's keys of ``[fairshare]``), sent
  to every Scheduler actor;
* :class:`OwnerPolicy`: what an owner governs of one host or vault live (its
  policy and arguments, its access list), sent to the actor that carries it;
* :class:`BoundNode`: a Ray node bound as a host, with what a ``[[ray_node]]``
  rule matches on, so the plan can tell which rule governs it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from legionrm.models.base import AccessPolicy, Frozen


class SitePolicySpec(Frozen):
    """The site policy as a cluster file sets it (``source``: the file, for its errors)."""

    source: str = "<memory>"
    qos: tuple[dict[str, Any], ...] = ()  # the [[qos]] tables, unchecked here
    class_qos: dict[str, str] = Field(default_factory=dict)  # class name -> its default QoS
    fairshare: dict[str, Any] = Field(default_factory=dict)  # the site's keys of [fairshare] only


class OwnerPolicy(Frozen):
    """The owner's policy (``"module:Class"`` or a ready-made policy's name, None: none) with its
    arguments, and the access list, of the host or vault ``resource``."""

    resource: str = Field(..., min_length=1, max_length=200)
    kind: Literal["host", "vault"] = "host"
    policy: str | None = None
    policy_args: dict[str, Any] = Field(default_factory=dict)
    access: AccessPolicy = AccessPolicy()


class BoundNode(Frozen):
    """The Ray node ``node_id`` bound as the host ``host``: its address, hostname and labels."""

    host: str
    node_id: str
    address: str = ""
    hostname: str = ""
    labels: dict[str, str] = Field(default_factory=dict)

    def entry(self) -> dict[str, Any]:
        """As ``ray.nodes()`` lists it (what :meth:`~legionrm.models.RayNodeRule.matches` reads)."""
        return {"NodeID": self.node_id, "NodeManagerAddress": self.address, "NodeManagerHostname": self.hostname,
                "Labels": dict(self.labels)}
