"""The Scheduler's door: who may call what, in front of the :class:`Scheduler` core.

Every user-facing call arrives with a signed proof (:mod:`legionrm.auth.proof`)
over the call's name and its arguments; the door verifies it with its
:class:`~legionrm.auth.guard.Guard` and then applies the roles
(:mod:`legionrm.auth.roles`):

- ``scheduleObjects``: the request's identity is replaced by the verified
  caller's (their name and the registry's groups, never what the request
  claims); ``activate`` may name only the caller's own instances;
- ``scheduleObjects`` of anyone but an administrator that sets ``priority``
  or ``weight`` is refused (``request.priority``): the site sets them;
- ``hold`` / ``release``: the request's owner or an admin (an owner releases
  only their own hold); ``update`` / ``top``: administrators only;
  ``share`` / ``prio``: a user sees their own rows;
- ``list_requests``: a user sees only their own requests (an admin all);
- ``request_info`` / ``cancel``: only the request's owner (or an admin);
- ``deactivate`` / ``activate`` / ``migrate`` / ``object_status`` of an object: only the
  owner of the request that made it (or an admin);
- triggers: a user subscribes only to their own requests and objects (a
  trigger on ``*`` hears only their own events), reads only their own
  requests' event streams and removes only their own triggers; an admin
  (or an agent) any;
- ``setCollection`` / ``setEnactor``: administrators only;
- ``approve``: only the Enactor agent;
- elastic jobs: submitted in the caller's name; completed or updated only by
  their owner (or an admin);
- views (``make_schedules`` / ``explain``, ``status``, ``instances``,
  ``cycle_reports``): a user sees only their own requests, instances and
  elastic jobs, and only the hosts their access allows (plans are made as
  the verified caller; ``explain`` of a host they may not use is
  ``auth.forbidden``); administrators and agents see everything.

A refusal of ``scheduleObjects`` is an ordinary not-ok response with one
failure carrying the ``auth.*`` code; other calls raise
:class:`~legionrm.auth.AuthRefusedError` (code on it).  ``guard=None`` means no
authentication: every call passes through unchanged (in-process systems, tests).
Pure: no Ray here.
"""

from __future__ import annotations

from typing import Any

from legionrm import codes
from legionrm.auth import VerifiedCaller, may_act_on, require_admin
from legionrm.auth.errors import AuthRefusedError
from legionrm.auth.guard import ENACTOR, Guard, raise_if_refused
from legionrm.errors import SchedulingError
from legionrm.events.triggers import EVERY, Subscriber, past_events, replayed
from legionrm.models import (
    AccountRecord,
    CycleReport,
    ElasticJobRequest,
    InstanceRef,
    ObjectStatus,
    Refusal,
    RequestInfo,
    ScheduleProposal,
    SchedulerResponse,
    SchedulerStatus,
    ScheduleSuite,
    SchedulingRequest,
    StatusEvent,
)
from legionrm.models.api import RequestList
from legionrm.models.priority import PrioReport, ShareReport
from legionrm.scheduler.confirm import refused_at_door
from legionrm.scheduler.depend.arrays import each_task, task_ids
from legionrm.scheduler.intake import door as intake_door
from legionrm.scheduler.mobility import Mobility
from legionrm.scheduler.priority import QueueControl
from legionrm.scheduler.scheduler import Scheduler
from legionrm.scheduler.watch.settle import list_page
from legionrm.state import SqliteFile


class SchedulerDoor:
    """Authenticates and authorises calls to ``core``; see the module doc."""

    def __init__(self, core: Scheduler, guard: Guard | None = None, enactor: str = ENACTOR,
                 mobility: Mobility | None = None) -> None:
        self.core, self.guard, self.enactor, self.mobility = core, guard, enactor, mobility
        self._control: QueueControl | None = None

    @property
    def control(self) -> QueueControl:
        """Hold, release, update and top over the core's queue (made on first use)."""
        if self._control is None:
            self._control = QueueControl(self.core.book, self.core.queue.site, self.core.replan,
                                         self.core.request_info)
        return self._control

    @property
    def open(self) -> bool:
        return self.guard is None

    def caller(self, proof: Any, call: str, args: Any) -> VerifiedCaller | None:
        """The verified caller (None on an open door); raises AuthRefusedError."""
        return None if self.guard is None else self.guard.require(proof, call, args)

    # --- requests ---------------------------------------------------------------------

    def scheduleObjects(self, request: SchedulingRequest, proof: Any = None) -> SchedulerResponse:
        if self.guard is None:
            return self.core.scheduleObjects(request)
        who = self.guard.check(proof, "scheduleObjects", {"request": request})
        if isinstance(who, Refusal):
            return refused_at_door(request, who)
        got = self.admit(who, request)
        return got if isinstance(got, SchedulerResponse) else self.core.scheduleObjects(got)

    def admit(self, who: VerifiedCaller, request: SchedulingRequest) -> SchedulingRequest | SchedulerResponse:
        """``request`` as ``who``'s (their identity, a user's hold theirs), or the answer refusing it
        (a user's own priority or weight; another's objects to activate)."""
        changes: dict[str, Any] = {"identity": who.identity(request.identity.class_name)}  # (valid values: one copy)
        if not who.is_admin:  # the site sets priority: a user's own priority or weight would jump the queue
            field = user_priority(request)
            if field is not None:
                return refused_at_door(request.replaced(**changes), Refusal(
                    code=codes.REQUEST_PRIORITY, by="scheduler",
                    reason=f"{field}: only an administrator sets a request's priority or weight; "
                           "the site sets them (choose a qos)"), key=field)
            if request.hold is not None:
                changes["hold"] = "user"
        request = request.replaced(**changes)
        for iid in request.activate:
            entry = self.core.book.owner_of(iid)
            if entry is not None and not (ok := may_act_on(who, entry.user, admin_may=True)):
                return refused_at_door(request, ok, key=iid)
        return request

    def intake_batch(self, items: list[Any] | str, proof: Any = None) -> list[Any] | bytes:
        """Many users' submits and cancels at once (:func:`legionrm.scheduler.intake.door.intake_batch`)."""
        return intake_door.intake_batch(self, items, proof)

    def list_requests(self, user: str | None = None, state: str | None = None, proof: Any = None) -> list[RequestInfo]:
        who = self.caller(proof, "list_requests", {"user": user, "state": state})
        return self.core.list_requests(self.own_user(who, user), state)

    def list_page(self, user: str | None = None, state: str | None = None, every: bool = False,
                  limit: int | None = None, cursor: str | None = None, proof: Any = None) -> RequestList:
        """One page of ``legionrm list`` (:func:`~legionrm.scheduler.watch.settle.list_page`); a user sees only their own."""
        who = self.caller(proof, "list_page", {"user": user, "state": state, "every": every, "limit": limit,
                                               "cursor": cursor})
        return list_page(self.core, self.own_user(who, user), state, every=every, limit=limit, cursor=cursor)

    def own_user(self, who: VerifiedCaller | None, user: str | None) -> str | None:
        """Whose work a view shows: a plain user only their own (asking for another's: ``auth.not_owner``)."""
        if who is not None and not who.is_admin and who.kind == "user":  # agents (the dashboard) see all
            if user is not None and user != who.name:
                raise_if_refused(may_act_on(who, user))
            return who.name
        return user

    def logs(self, request_id: str, instance: int | str | None = None, stream: str = "stdout", offset: int = 0,
             limit: int = 1 << 20, proof: Any = None) -> tuple[bytes, int, bool]:
        """A run's output (its request's owner or an admin; see :meth:`Results.output`)."""
        who = self.caller(proof, "logs", {"request_id": request_id, "instance": instance, "stream": stream,
                                          "offset": offset, "limit": limit})
        if who is not None:
            raise_if_refused(may_act_on(who, self.core.request_info(request_id).user, admin_may=True))
        return self.core.results.output(request_id, instance, stream, offset, limit)

    def history(self, user: str | None = None, since: float | None = None, until: float | None = None,
                state: str | None = None, proof: Any = None) -> list[AccountRecord]:
        """Finished instances' accounting records (a user: their own)."""
        who = self.caller(proof, "history", {"user": user, "since": since, "until": until, "state": state})
        return self.core.results.history(user=self.own_user(who, user), since=since, until=until, state=state)

    def request_info(self, request_id: str, proof: Any = None) -> RequestInfo:
        who = self.caller(proof, "request_info", {"request_id": request_id})
        info = self.core.request_info(request_id)
        if who is not None:
            raise_if_refused(may_act_on(who, info.user, admin_may=True))
        return info

    def cancel(self, request_id: str, reason: str = "cancelled by its user", proof: Any = None) -> RequestInfo:
        who = self.caller(proof, "cancel", {"request_id": request_id, "reason": reason})
        if who is not None:
            raise_if_refused(may_act_on(who, self.core.request_info(request_id).user, admin_may=True))
        return self.core.cancel(request_id, reason)

    # --- the queue: hold and release (its owner or an admin), update and top (an admin) ----------

    def _owner_or_admin(self, proof: Any, call: str, args: dict[str, Any]) -> bool:
        """May the caller act on ``args["request_id"]``?  Raises if not; True for an administrator (or an open door)."""
        who = self.caller(proof, call, args)
        if who is None:
            return True
        raise_if_refused(may_act_on(who, self.core.request_info(args["request_id"]).user, admin_may=True))
        return who.is_admin

    def hold(self, request_id: str, proof: Any = None) -> RequestInfo:
        admin = self._owner_or_admin(proof, "hold", {"request_id": request_id})
        return each_task(self.core.request_info, request_id, lambda rid: self.control.hold(rid, admin))  # an array: each

    def release(self, request_id: str, proof: Any = None) -> RequestInfo:
        admin = self._owner_or_admin(proof, "release", {"request_id": request_id})
        return each_task(self.core.request_info, request_id, lambda rid: self.control.release(rid, admin))

    def update(self, request_id: str, priority: int | None = None, qos: str | None = None,
               clear_priority: bool = False, proof: Any = None) -> RequestInfo:
        args = {"request_id": request_id, "priority": priority, "qos": qos, "clear_priority": clear_priority}
        self.require_admin(proof, "update", args, "update a request")
        return each_task(self.core.request_info, request_id,
                         lambda rid: self.control.update(rid, priority, qos, clear_priority))

    def top(self, request_id: str, proof: Any = None) -> RequestInfo:
        self.require_admin(proof, "top", {"request_id": request_id}, "put a request on top")
        info = self.core.request_info(request_id)  # read once: its tasks, and each_task's first look
        tasks = frozenset(task_ids(info))  # an array's go on top together
        return each_task(self.core.request_info, request_id, lambda rid: self.control.top(rid, beside=tasks), info)

    def share(self, proof: Any = None) -> ShareReport:
        """The fair-share tree (a user: the groups and their own row)."""
        user = self.view_user(proof, "share", {})
        return self.core.queue.site.share_report(self.core.book.entries(), user)

    def prio(self, proof: Any = None) -> PrioReport:
        """Each pending request's priority factors (a user: their own requests)."""
        user = self.view_user(proof, "prio", {})
        return self.core.queue.site.prio_report(self.core.book.entries(), user)

    # --- objects: deactivate / migrate (their owner or an admin) -----------------------------

    def _mover(self, proof: Any, call: str, args: Any, object_id: str) -> Mobility:
        """The core's mobility, once the caller may move ``object_id`` (raises AuthRefusedError)."""
        if self.mobility is None:
            raise AuthRefusedError(codes.OBJECT_UNSUPPORTED, "this scheduler does not move objects", "scheduler")
        who = self.caller(proof, call, args)
        owner = self.mobility.owner(object_id)
        if who is not None and owner is not None:  # an unknown object: the core's object.unknown
            raise_if_refused(may_act_on(who, owner, admin_may=True))
        return self.mobility

    def deactivate(self, object_id: str, reason: str = "deactivated by its user", proof: Any = None
                   ) -> ObjectStatus | Refusal:
        args = {"object_id": object_id, "reason": reason}
        return self._mover(proof, "deactivate", args, object_id).deactivate(object_id, reason)

    def activate(self, object_id: str, constraint: str = "true", proof: Any = None) -> ObjectStatus | Refusal:
        args = {"object_id": object_id, "constraint": constraint}
        return self._mover(proof, "activate", args, object_id).activate(object_id, constraint)

    def migrate(self, object_id: str, constraint: str = "true", proof: Any = None) -> ObjectStatus | Refusal:
        args = {"object_id": object_id, "constraint": constraint}
        return self._mover(proof, "migrate", args, object_id).migrate(object_id, constraint)

    def object_status(self, object_id: str, proof: Any = None) -> ObjectStatus | Refusal:
        return self._mover(proof, "object_status", {"object_id": object_id}, object_id).status(object_id)

    # --- triggers ------------------------------------------------------------------------

    def register_trigger(self, subject: str, statuses: list[str], subscriber: Subscriber, proof: Any = None) -> str:
        """A trigger on ``subject`` (a request id, an instance id, or ``*``)
        for the verified user (an administrator's or an open door's hears every
        user's events).  SchedulingError for an unknown subject; ValueError
        for an unknown status; AuthRefusedError for someone else's subject."""
        who = self.viewer(proof, "register_trigger", {"subject": subject, "statuses": list(statuses)})
        if subject != EVERY:
            entry = self.core.book.get(subject) or self.core.book.owner_of(subject)
            if entry is None:
                raise SchedulingError(f"no request or object {subject!r} is known to scheduler {self.core.name!r}",
                                      code=codes.REQUEST_UNKNOWN)
            if who is not None:
                raise_if_refused(may_act_on(who, entry.user, admin_may=True))
        return self.core.triggers.register(subject, statuses, subscriber, user=None if who is None else who.name)

    def remove_trigger(self, trigger_id: str, proof: Any = None) -> bool:
        """Remove a trigger (its owner or an administrator); False when there was none."""
        who = self.viewer(proof, "remove_trigger", {"trigger_id": trigger_id})
        if who is not None and trigger_id in self.core.triggers and self.core.triggers.owner(trigger_id) != who.name:
            raise AuthRefusedError(codes.AUTH_NOT_OWNER, f"trigger {trigger_id!r} is not {who.name!r}'s", "scheduler")
        return self.core.triggers.remove(trigger_id)

    def events_since(self, request_id: str, cursor: int = 0, proof: Any = None) -> list[StatusEvent]:
        """``request_id``'s status events after ``cursor`` (its owner or an admin)."""
        who = self.caller(proof, "events_since", {"request_id": request_id, "cursor": cursor})
        info = self.core.request_info(request_id)
        if who is not None:
            raise_if_refused(may_act_on(who, info.user, admin_may=True))
        return events_since(self.core, request_id, cursor)

    # --- administration ----------------------------------------------------------------

    def require_admin(self, proof: Any, call: str, args: Any, action: str) -> None:
        who = self.caller(proof, call, args)
        if who is not None:
            raise_if_refused(require_admin(who, action))

    def _not_the_enactor(self, proof: Any, call: str, proposal: ScheduleProposal) -> Refusal | None:
        """None when the Enactor (or anyone, on a door that checks nobody) asks, else why not."""
        if self.guard is None:
            return None
        who = self.guard.check(proof, call, {"proposal": proposal})
        if isinstance(who, Refusal):
            return who
        if who.name != self.enactor:
            return Refusal(code=codes.AUTH_FORBIDDEN, by="scheduler",
                           reason=f"only the Enactor ({self.enactor}) asks for approval, not {who.name!r}")
        return None

    def approve(self, proposal: ScheduleProposal, proof: Any = None) -> bool | Refusal:
        refused = self._not_the_enactor(proof, "approve", proposal)
        return refused if refused is not None else self.core.enactment.approve(proposal)

    def approve_growth(self, proposal: ScheduleProposal, proof: Any = None) -> Refusal | None:
        """None when the Enactor asks to confirm an elastic growth (the fair-share core chose it), else why not."""
        return self._not_the_enactor(proof, "approve_growth", proposal)

    # --- elastic jobs --------------------------------------------------------------------

    def elastic_request(self, request: ElasticJobRequest, proof: Any = None) -> ElasticJobRequest:
        """``request`` in the verified caller's name, with the registry's groups (never the groups it claims:
        they are what the Scheduler attests to the hosts its processes run on)."""
        who = self.caller(proof, "submit_elastic", {"request": request})
        return request if who is None else request.model_copy(update={"user": who.name, "groups": who.groups})

    def elastic_owner_check(self, owner: str | None, call: str, args: Any, proof: Any = None) -> None:
        """Raise unless the caller owns the elastic job of ``owner`` (or is an admin)."""
        who = self.caller(proof, call, args)
        if who is not None and owner is not None:
            raise_if_refused(may_act_on(who, owner, admin_may=True))


    # --- views ---------------------------------------------------------------------------

    def viewer(self, proof: Any, call: str, args: Any) -> VerifiedCaller | None:
        """The user a view is filtered for; None when the caller sees everything
        (an open door, an administrator, an agent).  Raises AuthRefusedError."""
        who = self.caller(proof, call, args)
        if who is None or who.is_admin or not who.is_user:
            return None
        return who

    def hosts_of(self, who: VerifiedCaller) -> tuple[set[str], set[str]]:
        """(the resources ``who``'s access allows, every resource), from the Collection."""
        coll = self.core.getCollection()
        mine = {r.name for r in coll.query("true", who.identity(), True).records}
        every = {r.name for r in coll.query("true", None, True).records}
        return mine, every

    def make_schedules(self, request: SchedulingRequest, proof: Any = None) -> ScheduleSuite:
        """The plan without enacting it; a user's is made as them and names no host hidden from them."""
        who = self.viewer(proof, "make_schedules", {"request": request})
        if who is None:
            return self.core.make_schedules(request).suite()
        request = request.model_copy(update={"identity": who.identity(request.identity.class_name)})
        suite = self.core.make_schedules(request).suite()
        mine, every = self.hosts_of(who)
        hidden = every - mine
        masters = tuple(m for m in suite.masters if not any(p.host in hidden for p in m.placements))
        return suite.model_copy(update={
            "masters": masters,
            "failures": tuple(f for f in suite.failures if f.resource not in hidden),
            "refused": tuple(f for f in suite.refused if f.resource not in hidden)})

    def explain(self, request: SchedulingRequest, host: str, proof: Any = None) -> str:
        """Why ``host`` would or would not take ``request``; a user asks only about hosts they may use."""
        who = self.viewer(proof, "explain", {"request": request, "host": host})
        if who is not None:
            if host not in self.hosts_of(who)[0]:
                raise AuthRefusedError(codes.AUTH_FORBIDDEN, f"host {host!r} is not one {who.name!r} may use", "scheduler")
            request = request.model_copy(update={"identity": who.identity(request.identity.class_name)})
        return self.core.explain(request, host)

    def view_user(self, proof: Any, call: str, args: Any) -> str | None:
        """The user a view shows (their own work only), or None for everything."""
        who = self.viewer(proof, call, args)
        return None if who is None else who.name

    def instances(self, proof: Any = None) -> list[InstanceRef]:
        user = self.view_user(proof, "instances", {})
        return [i for i in self.core.instances.values() if user is None or i.user == user]


def events_since(core: Scheduler, request_id: str, cursor: int = 0) -> list[StatusEvent]:
    """``request_id``'s status events after ``cursor``: as they were fired, or, for a request
    that left the live book, rebuilt from its history.  SchedulingError if unknown."""
    if core.triggers.has_stream(request_id):
        return core.triggers.events_since(request_id, cursor)
    return [e for e in replayed(past_events(core.request_info(request_id))) if e.seq > cursor]


def status_for(core: Any, last: CycleReport | None, user: str | None) -> SchedulerStatus:
    """The operators' summary of Scheduler ``core`` (``legionrm status``) with
    the elastic cycle's ``last`` report, as ``user`` may see it (None: all).  Read-only."""
    hosts: dict[str, int] = {}
    for inst in list(core.instances.values()):
        hosts[inst.host] = hosts.get(inst.host, 0) + 1
    report = getattr(core.accounts.pools, "report", None)
    full = SchedulerStatus(
        requests=core.book.count_states(),
        instances=sum(hosts.values()), hosts=hosts, last_cycle=last.cycle if last else 0,
        elastic={k: j.model_copy(update={"instances": ()}) for k, j in (last.jobs if last else {}).items()},
        pools={path: {k: v for k, v in entry.items() if k in ("entitlement", "allocation", "custom")}
               for path, entry in (report() if report else {}).items()},
        store=store_status(core.book.store, core.results.store),
    )
    if user is None:
        return full
    return own_status(full, user, list(core.instances.values()), core.book.count_states(user))


def store_status(store: SqliteFile | None, *others: SqliteFile | None) -> dict[str, Any]:
    """``store``'s path and size, and the first fault of it or ``others`` (files beside it) while writes fail."""
    if store is None:
        return {}
    fault = next((s.fault for s in (store, *others) if s is not None and s.fault is not None), None)
    return {"path": store.where, "bytes": store.size(), **({"fault": str(fault)} if fault is not None else {})}



def own_status(status: SchedulerStatus, user: str | None, instances: list[InstanceRef],
               requests: dict[str, int]) -> SchedulerStatus:
    """``status`` as ``user`` may see it: their instances (and the hosts those
    run on), their requests and elastic jobs; pools stay (totals only).  None: all."""
    if user is None:
        return status
    hosts: dict[str, int] = {}
    for inst in instances:
        if inst.user == user:
            hosts[inst.host] = hosts.get(inst.host, 0) + 1
    return status.model_copy(update={
        "instances": sum(hosts.values()), "hosts": hosts, "requests": requests,
        "elastic": {k: j for k, j in status.elastic.items() if j.user == user}})


def own_report(report: CycleReport, user: str | None) -> CycleReport:
    """A cycle report as ``user`` may see it: their jobs, totals and changes,
    and only the hosts their jobs run on.  None: all."""
    if user is None:
        return report
    jobs = {k: j for k, j in report.jobs.items() if j.user == user}
    mine = [c for c in (*report.grew, *report.shrank, *report.refused) if c.user == user]
    hosts = {h for j in jobs.values() for h in j.hosts} | {c.host for c in mine}
    return report.model_copy(update={
        # a trigger names a job or a host ("arrival <job>", "exit <job> ..."): only bare ones and their own jobs'
        "triggers": tuple(t for t in report.triggers if len(t.split()) == 1 or t.split()[1] in jobs),
        "jobs": jobs, "users": {u: t for u, t in report.users.items() if u == user},
        "grew": tuple(c for c in report.grew if c.user == user),
        "shrank": tuple(c for c in report.shrank if c.user == user),
        "refused": tuple(c for c in report.refused if c.user == user),
        "hosts": {h: s for h, s in report.hosts.items() if h in hosts},
        "needy": tuple(j for j in report.needy if j in jobs)})


def user_priority(request: SchedulingRequest) -> str | None:
    """The first place ``request`` sets a priority or a weight itself (``priority``,
    ``object[0].weight``), or None: only an administrator's request may."""
    if request.priority is not None:
        return "priority"
    for i, obj in enumerate(request.objects):
        for name in ("priority", "weight"):
            if getattr(obj, name) is not None:
                return f"object[{i}].{name}"
    return None
