"""An owner's policy and access list, changed on a running host or vault.

:func:`reconfigure` takes a list of :class:`~legionrm.models.OwnerPolicy`,
one per resource, and changes them all or none: every policy is built (and
every resource found) first, so a class that does not import, arguments it
refuses, or an owner's subclass of the resource (a subclass *is* the
resource, with its calendar and instances: it changes only with ``down``
and ``up``) refuses the whole list before anything changes.  Then each
resource takes its new policy and access list under its own lock, and joins
the Collection again, so the Collection stops (or starts) offering it to the
callers the new list names at once.  Reservations already granted stay
granted; the new policy judges what is asked from then on.  Pure: no Ray.
"""

from __future__ import annotations

import logging
from typing import Callable, Sequence

from legionrm import codes
from legionrm.errors import ConfigError
from legionrm.hostobj.build import owner_class
from legionrm.hostobj.host import HostObject
from legionrm.hostobj.owners.policy import Policy, load_policy
from legionrm.hostobj.records import public
from legionrm.hostobj.resource import ResourceObject
from legionrm.hostobj.vault import VaultObject
from legionrm.models import AccessPolicy, OwnerPolicy, Refusal
from legionrm.state import StoreFault

log = logging.getLogger(__name__)

Find = Callable[[str], ResourceObject | None]
"""The resource of a name among those an actor carries (None: not carried here)."""


def _built_in(resource: ResourceObject) -> bool:
    """Was ``resource`` built from legionrm's own classes (not from an owner's subclass)?"""
    return type(resource).__module__.startswith("legionrm.hostobj.")


def policy_for(resource: ResourceObject, change: OwnerPolicy) -> Policy | None:
    """The policy ``change`` names, built for ``resource`` (None: no policy, or the owner's
    subclass ``resource`` already is, whose hooks are its policy).  Raises ConfigError, in
    one line: the policy does not import, is not a policy, refuses its arguments, or
    ``change`` would turn ``resource`` into, or out of, an owner's subclass."""
    where = f"{change.kind} {change.resource}"
    owner = owner_class(change.policy, HostObject if change.kind == "host" else VaultObject, where)
    if owner is not None:
        if isinstance(resource, owner):
            return resource.policy
        raise ConfigError(f"{change.policy} is an owner's subclass of the {change.kind} itself: "
                          "it changes only with `legionrm down` and `up`", table=where, key="policy")
    if not _built_in(resource):
        raise ConfigError(f"it is an owner's {type(resource).__name__}: its policy changes only with "
                          "`legionrm down` and `up`", table=where, key="policy")
    return load_policy(change.policy, change.policy_args) if change.policy else None


@public
def _swap(resource: ResourceObject, policy: Policy | None, access: AccessPolicy) -> None:
    """Both at once, under the resource's lock: no call sees the new policy with the old access list."""
    resource.policy, resource.access = policy, access


def reconfigure(find: Find, changes: Sequence[OwnerPolicy], check: bool = False,
                keep: Callable[[], object] | None = None) -> Refusal | None:
    """Give each resource of ``changes`` its policy and access list, all or none (see the
    module); with ``check``, only say whether it could.  ``keep`` writes the resources'
    durable states (their ``owner_change`` with them) before any policy changes; a write
    that fails (StoreFault) changes nothing and is answered with the fault's code.  None
    when done (or possible), else the refusal (``reload.refused``, naming the resource)
    and nothing changed.  Idempotent."""
    built: list[tuple[ResourceObject, Policy | None, AccessPolicy]] = []
    for change in changes:
        resource = find(change.resource)
        if resource is None:
            return Refusal(code=codes.RELOAD_REFUSED, by=change.resource,
                           reason=f"no {change.kind} {change.resource!r} is carried here")
        try:
            built.append((resource, policy_for(resource, change), change.access))
        except ConfigError as exc:
            where = "" if exc.table else f"{change.kind} {change.resource}: "  # (a policy's own error names no table)
            return Refusal(code=codes.RELOAD_REFUSED, by=change.resource, reason=f"{where}{exc}")
    if check:
        return None
    if keep is not None:  # written first: an actor Ray restarts takes these policies back (owners_back)
        before = [(resource, resource.owner_change) for resource, _, _ in built]
        for (resource, _, _), change in zip(built, changes):
            resource.owner_change = change
        try:
            keep()
        except StoreFault as fault:
            for resource, old in before:
                resource.owner_change = old
            return Refusal(code=fault.code, by=changes[0].resource, reason=f"the new policies are not written: {fault}")
    for resource, policy, access in built:
        _take(resource, policy, access)
    return None


def _take(resource: ResourceObject, policy: Policy | None, access: AccessPolicy) -> None:
    """``resource`` judges by ``policy`` and ``access`` from now on, and the Collection hears the new access list."""
    _swap(resource, policy, access)
    if resource.joined:  # the record carries the access list (a heartbeat carries attributes only)
        resource.join()


def owners_back(resources: Sequence[ResourceObject]) -> None:
    """After a restart of the actor carrying ``resources``: each that a reload had given an
    owner's policy (its restored ``owner_change``) takes it back before it serves.  A
    policy that no longer builds (its module gone since) leaves the cluster file's, and
    says so in the log: the resource still serves."""
    for resource in resources:
        change = resource.owner_change
        if change is None:
            continue
        try:
            policy = policy_for(resource, change)
        except ConfigError as exc:
            log.warning("%s %s keeps the cluster file's policy: its reloaded one does not build: %s",
                        change.kind, change.resource, exc)
            continue
        _take(resource, policy, change.access)
