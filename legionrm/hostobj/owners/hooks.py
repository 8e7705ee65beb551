"""An owner's hooks, run safely: a mistake refuses (or is dropped), never breaks the resource.

:func:`ask_owner` reads an owner's yes or no (:data:`~legionrm.hostobj.owners.policy.ADMIT`
or a :class:`~legionrm.models.Refusal`); :func:`owner_attributes` keeps what an
owner's ``attributes()`` hook says that a record can carry.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from legionrm import codes
from legionrm.hostobj.owners.policy import ADMIT, Admission, Verdict
from legionrm.models import AttrValue, Refusal


def ask_owner(hook: str, call: Callable[..., Any], *args: Any, by: str) -> Verdict:
    """Run an owner's hook and read its answer safely.

    ``ADMIT`` (or ``True``) admits; a Refusal refuses (its ``by`` defaults to
    ``by``); anything else (``False``, ``None`` from a forgotten return, any
    other value) or an exception refuses with code ``policy``.  An owner's
    mistake never admits by accident and never breaks the resource.
    """
    try:
        verdict = call(*args)
    except Exception as exc:  # a broken hook refuses; it does not break the caller
        return Refusal(code=codes.POLICY, reason=f"owner hook {hook} raised {type(exc).__name__}: {exc}", by=by)
    if isinstance(verdict, Refusal):
        return verdict if verdict.by else verdict.model_copy(update={"by": by})
    if isinstance(verdict, Admission) or verdict is True:
        return ADMIT
    return Refusal(code=codes.POLICY, reason=f"owner hook {hook} answered {verdict!r}, not ADMIT or a Refusal", by=by)


def owner_attributes(call: Callable[[], Any]) -> tuple[dict[str, AttrValue], str | None]:
    """Run an owner's ``attributes()`` hook and keep what a record can carry.

    Returns the attributes (string keys with bool, int, float or str values;
    anything else is dropped) and an error text when the hook raised or did not
    return a mapping (then no owner attribute is kept).  A broken hook never
    stops a resource from joining the collection or sending its heartbeat.
    """
    try:
        answer = call()
    except Exception as exc:
        return {}, f"{type(exc).__name__}: {exc}"[:200]
    if not isinstance(answer, Mapping):
        return {}, f"attributes() returned {type(answer).__name__}, not a mapping"
    return {k: v for k, v in answer.items() if isinstance(k, str) and isinstance(v, (bool, int, float, str))}, None
