"""What ``legionrm reload`` gave one Scheduler, written before it is taken and
given back to the Scheduler Ray restarts: :class:`KeptReload`.

A reload changes a running Scheduler's site policy (the ``[[qos]]`` tables,
each class's default QoS, the site's keys of ``[fairshare]``), what it
serves (its nodepools and constraint) and, for the default Scheduler, the
``[[ray_node]]`` rules the Ray nodes that join are bound by.  Ray restarts a Scheduler actor with
the arguments it was first made with, the cluster file of ``up``; so each
change is first written to the Scheduler's state store
(:class:`~legionrm.state.reloaded.ReloadedStore`), under the actor's boot
(its id, which Ray keeps across a restart), and only then taken.  A write the
disk refuses changes nothing and is the step's refusal (the reload is set
back).  At init :meth:`KeptReload.cluster` gives the cluster file as the
reloads of this boot left it, so the Scheduler is built with them; a new
``up`` is a new boot and starts from its file.  Pure: no Ray.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable, Iterable

from legionrm.errors import ConfigError
from legionrm.models import ClusterSpec, RayNodeRule, Refusal, SchedulerSpec, SitePolicySpec
from legionrm.scheduler.priority import SitePolicy
from legionrm.scheduler.priority.settings import SITE_KEYS, settings_of, site_spec
from legionrm.scheduler.requests import Entry
from legionrm.state import StoreFault
from legionrm.state.reloaded import Reloaded, ReloadedStore

log = logging.getLogger(__name__)


def with_site(cluster: ClusterSpec, site: SitePolicySpec) -> ClusterSpec:
    """``cluster`` with the site policy ``site`` (the rest of it, the elastic cycle's
    ``[fairshare]`` keys among it, as it is)."""
    fairshare = {k: v for k, v in cluster.fairshare.items() if k not in SITE_KEYS} | site.fairshare
    classes = tuple(c.model_copy(update={"qos": site.class_qos.get(c.name)}) for c in cluster.classes)
    return cluster.model_copy(update={"qos": site.qos, "classes": classes, "fairshare": fairshare})


def with_serves(cluster: ClusterSpec, serves: SchedulerSpec) -> ClusterSpec:
    """``cluster`` with the scheduler ``serves.name`` serving what ``serves`` says."""
    return cluster.model_copy(update={"schedulers": tuple(serves if s.name == serves.name else s
                                                          for s in cluster.scheduler_specs())})


class KeptReload:
    """The reloads of the Scheduler ``name``'s boot ``boot``, kept in ``store`` (None: not
    kept, as for a Scheduler without a state store)."""

    def __init__(self, store: ReloadedStore | None, boot: str, name: str = "scheduler") -> None:
        self.store, self.boot, self.name = store, boot, name
        self.site_now: SitePolicySpec | None = None
        """The site policy the Scheduler runs (set by :meth:`cluster`, then by each reload): what a
        reload that raced a new request writes back."""
        self._lock = threading.Lock()  # one site change at a time: the store and memory agree

    def cluster(self, cluster: ClusterSpec) -> ClusterSpec:
        """``cluster`` (the file this Scheduler was made with) as the reloads of this boot left
        it.  A kept site policy that no longer validates leaves the file's, and says so in the log."""
        back = self.store.load(self.boot) if self.store is not None else Reloaded()
        if back.site is not None:
            try:
                settings_of(back.site)
                cluster = with_site(cluster, back.site)
            except ConfigError as exc:
                log.warning("scheduler %s keeps the cluster file's site policy: its reloaded one does not "
                            "validate: %s", self.name, exc)
        if back.serves is not None:
            cluster = with_serves(cluster, back.serves)
        if back.rules is not None:
            cluster = cluster.model_copy(update={"ray_nodes": back.rules})
        self.site_now = site_spec(cluster)
        return cluster

    def site(self, policy: SitePolicy, entries: Callable[[], Iterable[Entry]], spec: SitePolicySpec,
             check: bool = False) -> Refusal | None:
        """``policy`` orders and limits by ``spec`` from now on, written first (with ``check``:
        only whether it could).  None when done, else why not, and nothing changed."""
        if check:
            return policy.reload(spec, entries(), check=True)
        with self._lock:
            why = policy.reload(spec, entries(), check=True)
            if why is not None:
                return why
            refused = self._write(site=spec)
            if refused is not None:
                return refused
            why = policy.reload(spec, entries())
            if why is None:
                self.site_now = spec
            elif self.site_now is not None:  # a request came in a dropped QoS since the check: kept as it runs
                self._write(site=self.site_now)
            return why

    def serves(self, spec: SchedulerSpec) -> Refusal | None:
        """Write that this Scheduler serves ``spec``, before it does: None, or why it is not written."""
        return self._write(serves=spec)

    def rules(self, rules: tuple[RayNodeRule, ...]) -> Refusal | None:
        """Write that the Ray nodes that join are bound by ``rules``, before they are: None, or
        why it is not written."""
        return self._write(rules=rules)

    def _write(self, *, site: SitePolicySpec | None = None, serves: SchedulerSpec | None = None,
               rules: tuple[RayNodeRule, ...] | None = None) -> Refusal | None:
        if self.store is None:
            return None
        try:
            self.store.write(self.boot, site=site, serves=serves, rules=rules)
        except StoreFault as fault:
            return Refusal(code=fault.code, by=self.name, reason=f"the reloaded settings are not written: {fault}")
        return None
