"""``reconfigure`` on the host, host-group and vault actors: a mixin that only
forwards to :func:`legionrm.hostobj.live.owner.reconfigure`, so the shells stay thin."""

from __future__ import annotations

from typing import Any

from legionrm.hostobj.group import HostGroup
from legionrm.hostobj.live.owner import reconfigure
from legionrm.hostobj.resource import ResourceObject
from legionrm.models import OwnerPolicy, Refusal


class OwnerCalls:
    """The resources are ``self._batch`` (a lone host's group of one) or ``self.core`` (a
    host group, or one vault); the door of housekeeping calls is ``self.views``."""

    views: Any
    core: Any

    def reconfigure(self, changes: list[OwnerPolicy], check: bool = False, proof: Any = None) -> Refusal | None:
        """Give each resource of ``changes`` its owner's policy and access list, all or none
        (``legionrm reload``; with ``check`` only whether it could): the system or an administrator."""
        self.views.require_system(proof, "reconfigure", {"changes": changes, "check": check}, admin=True)
        keeper = getattr(self, "_keeper", None)
        return reconfigure(self._carried, changes, check, keep=None if keeper is None else keeper.save)

    def _carried(self, name: str) -> ResourceObject | None:
        group = getattr(self, "_batch", None) or self.core
        if isinstance(group, HostGroup):
            return group.get(name)
        return group if group.name == name else None
