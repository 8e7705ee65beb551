"""The Collection's door: who may write the system's view, and what each caller sees.

In front of the :class:`~legionrm.collection.collection.Collection` core, with
a :class:`~legionrm.auth.guard.Guard` (pure; ``guard=None``: no authentication):

- ``join`` / ``update`` / ``leave`` of a resource's record only by that
  resource's own agent (``auth.wrong_resource``; each host and vault gets its
  own key when its actor starts);
- ``vary_off`` / ``vary_on``, sub-collections: administrators only (``auth.forbidden``);
- ``query``: a user is answered as themselves (the registry's groups; the
  ``caller`` they pass is ignored), so no host their access forbids comes
  back; administrators and agents (the Scheduler) ask for any caller or none;
- ``record`` / ``retrieve_all_attributes``: a user asking for a resource they
  may not use is told it is not theirs to see (``auth.forbidden``);
- ``snapshot`` (every record, for planning): agents and administrators only;
  so are ``refused_writes``: each resource's latest write the door refused
  (:class:`~legionrm.collection.answering.RefusedWrites`), why it does not
  answer.

Every refusal raises :class:`~legionrm.auth.AuthRefusedError` with its code.
"""

from __future__ import annotations

from typing import Any, Mapping

from legionrm import codes
from legionrm.auth import VerifiedCaller, may_write_record, require_admin
from legionrm.auth.errors import AuthRefusedError
from legionrm.auth.guard import Guard, raise_if_refused
from legionrm.collection.answering import RefusedWrites, signer_of
from legionrm.collection.collection import Collection
from legionrm.collection.view import Caller, CollectionSnapshot
from legionrm.models import AttrValue, Identity, QueryResult, RefusedWrite, ResourceRecord


class CollectionDoor:
    """Authenticates and authorises calls to ``core``; see the module doc."""

    def __init__(self, core: Collection, guard: Guard | None = None) -> None:
        self.core, self.guard = core, guard
        self.refusals = RefusedWrites()

    @property
    def open(self) -> bool:
        return self.guard is None

    def _who(self, proof: Any, call: str, args: Any) -> VerifiedCaller | None:
        return None if self.guard is None else self.guard.require(proof, call, args)

    def _resource(self, proof: Any, call: str, args: Any, name: str, kind: str | None = None) -> None:
        """Only ``name``'s own agent writes its record; a refusal is kept as why ``name`` does not answer."""
        try:
            who = self._who(proof, call, args)
            if who is not None:
                raise_if_refused(may_write_record(who, name, kind))
        except AuthRefusedError as exc:
            self.refusals.refused(name, signer_of(proof), exc.code, exc.reason)
            raise

    def require_admin(self, proof: Any, call: str, args: Any, action: str) -> None:
        """Refuse (raise) unless the caller of ``call`` is an administrator allowed ``action`` (an open door: anyone)."""
        who = self._who(proof, call, args)
        if who is not None:
            raise_if_refused(require_admin(who, action))

    # --- writing (resources themselves; operators) ---------------------------------------

    def join(self, record: ResourceRecord, proof: Any = None) -> None:
        self._resource(proof, "join", {"record": record}, record.name, record.kind)
        self.core.join(record)
        self.refusals.answered(record.name)

    def update(self, name: str, attrs: Mapping[str, AttrValue] | None = None, proof: Any = None) -> None:
        self._resource(proof, "update", {"name": name, "attrs": dict(attrs or {})}, name)
        self.core.update(name, attrs)
        self.refusals.answered(name)

    def update_many(self, updates: list[tuple[str, dict[str, AttrValue]]], proofs: list[Any] | None = None) -> None:
        """Heartbeats of many resources, each with its own resource's proof,
        written in one batch; a refused one does not stop the others (the
        first refusal is raised after)."""
        ok: list[tuple[str, Mapping[str, AttrValue | None] | None]] = []
        failed: list[Exception] = []
        for i, (name, attrs) in enumerate(updates):
            try:
                self._resource(proofs[i] if proofs is not None and i < len(proofs) else None, "update",
                               {"name": name, "attrs": dict(attrs or {})}, name)
            except Exception as exc:  # a refused proof
                failed.append(exc)
                continue
            ok.append((name, attrs))
        try:
            self.core.update_many(ok)
        except Exception as exc:  # an unknown resource or a bad value
            failed.append(exc)
        else:
            for name, _ in ok:
                self.refusals.answered(name)
        if failed:
            raise failed[0]

    def leave(self, name: str, proof: Any = None) -> bool:
        self._resource(proof, "leave", {"name": name}, name)
        return self.core.leave(name)

    def vary_off(self, name: str, proof: Any = None) -> None:
        self.require_admin(proof, "vary_off", {"name": name}, "vary_hosts")
        self.core.vary_off(name)

    def vary_on(self, name: str, proof: Any = None) -> None:
        self.require_admin(proof, "vary_on", {"name": name}, "vary_hosts")
        self.core.vary_on(name)

    # --- reading ------------------------------------------------------------------------

    def viewer(self, proof: Any, call: str, args: Any) -> tuple[bool, Identity | None]:
        """(sees everything, the identity answers are filtered for)."""
        who = self._who(proof, call, args)
        if who is None or who.is_admin or not who.is_user:
            return True, None
        return False, who.identity()

    def query(self, text: str, caller: Caller = None, include_unavailable: bool = False, proof: Any = None) -> QueryResult:
        all_, me = self.viewer(proof, "query", {"text": text, "caller": caller, "include_unavailable": include_unavailable})
        return self.core.query(text, caller if all_ else me, include_unavailable)

    def record(self, name: str, proof: Any = None, call: str = "record") -> ResourceRecord:
        all_, me = self.viewer(proof, call, {"name": name})
        rec = self.core.record(name)
        if not all_ and not rec.access.accepts(me):
            raise AuthRefusedError(codes.AUTH_FORBIDDEN, f"resource {name!r} does not accept {me.user!r}", "collection")
        return rec

    def retrieve_all_attributes(self, name: str, proof: Any = None) -> dict[str, AttrValue]:
        self.record(name, proof, "retrieve_all_attributes")  # the same check, for this call
        return self.core.retrieve_all_attributes(name)

    def snapshot(self, proof: Any = None) -> CollectionSnapshot:
        all_, me = self.viewer(proof, "snapshot", {})
        if not all_:
            raise AuthRefusedError(codes.AUTH_FORBIDDEN, f"only the system's agents and administrators read the whole "
                                   f"Collection; {me.user!r} may query it (legionrm query)", "collection")
        return self.core.snapshot()

    def refused_writes(self, proof: Any = None) -> list[RefusedWrite]:
        """Each resource's latest refused write, latest first: agents and administrators only."""
        all_, me = self.viewer(proof, "refused_writes", {})
        if not all_:
            raise AuthRefusedError(codes.AUTH_FORBIDDEN, f"only the system's agents and administrators see why "
                                   f"resources do not answer; {me.user!r} may not", "collection")
        return self.refusals.latest()

    def names(self, proof: Any = None) -> list[str]:
        all_, me = self.viewer(proof, "names", {})
        return self.core.names() if all_ else [r.name for r in self.core.query("true", me, True).records]
