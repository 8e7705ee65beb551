"""Which scheduler a request goes to, as the gateway sees the system.

A :class:`Roster` is the system's schedulers in order (the default first)
and the scheduler each class object names; ``up`` and ``reload`` write it
into ``up.json`` (:meth:`Roster.as_json`), and the gateway reads it there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from legionrm import codes
from legionrm.models import ClusterSpec, Refusal, SchedulerSpec, SchedulingRequest


@dataclass(frozen=True)
class Roster:
    """The schedulers of a system (never empty; the first is the default) and
    class name -> the scheduler that class object names."""

    schedulers: tuple[SchedulerSpec, ...] = (SchedulerSpec(),)
    by_class: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, spec: ClusterSpec) -> "Roster":
        return cls(spec.scheduler_specs(), {c.name: c.scheduler for c in spec.classes if c.scheduler})

    @classmethod
    def from_json(cls, doc: Any) -> "Roster":
        """What :meth:`as_json` wrote; the one default scheduler when ``doc`` holds none."""
        if not isinstance(doc, dict) or not doc.get("schedulers"):
            return cls()
        return cls(tuple(SchedulerSpec.model_validate(s) for s in doc["schedulers"]), dict(doc.get("by_class", {})))

    @classmethod
    def from_state(cls, path: Path) -> "Roster":
        """The roster ``up`` (or the last reload) wrote into the ``up.json`` at ``path``; the one
        default scheduler when it cannot be read."""
        try:
            doc = json.loads(path.read_text()).get("roster")
        except (OSError, ValueError, AttributeError):
            doc = None
        return cls.from_json(doc)

    def as_json(self) -> dict[str, Any]:
        return {"schedulers": [s.model_dump(mode="json") for s in self.schedulers], "by_class": dict(self.by_class)}

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.schedulers]

    @property
    def default(self) -> str:
        return self.schedulers[0].name

    def route(self, request: SchedulingRequest) -> str | Refusal:
        """The scheduler ``request`` goes to: the one it names, else the one its
        first class object names, else the default; ``request.no_scheduler`` when
        the name is none of this system's."""
        want = request.scheduler or next((self.by_class[o.class_name] for o in request.objects
                                          if o.class_name in self.by_class), self.default)
        if want not in self.names:
            return Refusal(code=codes.REQUEST_NO_SCHEDULER, by="gateway",
                           reason=f"no scheduler {want!r} in this system (schedulers: {', '.join(self.names)})")
        return want
