"""The ``after`` graph within one request (issue 26): which objects start first.

An object request may name others of the same request it must follow
(``after = ["NAME"]``; an object request's name is its ``name``, else its
``class_name``).  Its instances are created only once every instance of the
objects it names runs.  :func:`after_problem` is the check at submit (a
name no object request has, a name two share, an object that follows
itself, a cycle), :func:`key_after` turns the graph into placement keys for
the Enactor (:attr:`~legionrm.models.EnactRequest.after`), and
:func:`waves` orders a set of keys into rounds of creation, each round's
predecessors all in earlier rounds; :func:`after_refusal` is the
Scheduler's refusal at submit.

After work that ends (a ``Command``: runner work) an object starts only once
every instance of it ended well (``completed``): such a request starts in
stages (:mod:`legionrm.scheduler.stages`).  :func:`ready` says which
objects may start now, :func:`waits` whether a running request still has a
stage to come; both read only the request and its instances (each knows the
object it is of: ``InstanceInfo.name``), so a restarted Scheduler finds the
same stage.  Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

from legionrm import codes
from legionrm.models import InstanceInfo, ObjectRequest, Refusal, RequestEvent, SchedulingRequest


def name_of(obj: ObjectRequest) -> str:
    """What the other object requests of its request call ``obj``."""
    return obj.name or obj.class_name


def after_problem(objects: Sequence[ObjectRequest]) -> str | None:
    """Why the ``after`` graph of ``objects`` cannot be honoured, in one line
    naming the objects (None: it can, or no object names any)."""
    if not any(o.after for o in objects):
        return None
    names = [name_of(o) for o in objects]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        return f"objects {', '.join(twice)} share a name: give each a distinct name for after"
    known = set(names)
    for o in objects:
        missing = [a for a in o.after if a not in known]
        if missing:
            return f"object {name_of(o)} is after {', '.join(missing)}: no object of the request has that name"
        if name_of(o) in o.after:
            return f"object {name_of(o)} is after itself"
    cycle = _cycle({name_of(o): tuple(o.after) for o in objects})
    if cycle:
        return f"objects {' -> '.join(cycle)} follow each other in a cycle"
    return None


def after_refusal(request: SchedulingRequest) -> Refusal | None:
    """The submit-time refusal of a request whose ``after`` graph is wrong (``request.after``), else None."""
    why = after_problem(request.objects)
    return None if why is None else Refusal(code=codes.REQUEST_AFTER, by="scheduler", reason=why)


def _cycle(graph: Mapping[str, Sequence[str]]) -> list[str]:
    """One cycle of ``graph`` as a closed path (first name repeated last), or []."""
    colour: dict[str, int] = {}  # 1 on the path, 2 done
    for root in sorted(graph):
        if root in colour:
            continue
        stack: list[tuple[str, int]] = [(root, 0)]
        path: list[str] = [root]
        colour[root] = 1
        while stack:
            node, i = stack[-1]
            succ = graph.get(node, ())
            if i < len(succ):
                stack[-1] = (node, i + 1)
                nxt = succ[i]
                if colour.get(nxt) == 1:
                    return path[path.index(nxt):] + [nxt]
                if nxt not in colour:
                    colour[nxt] = 1
                    stack.append((nxt, 0))
                    path.append(nxt)
            else:
                colour[node] = 2
                stack.pop()
                path.pop()
    return []


def key_after(objects: Sequence[ObjectRequest], keys: Sequence[Sequence[str]]) -> dict[str, tuple[str, ...]]:
    """Per placement key, the keys it follows (``keys[i]`` are object ``i``'s); only keys that follow some."""
    by_name = {name_of(o): tuple(k) for o, k in zip(objects, keys)}
    out: dict[str, tuple[str, ...]] = {}
    for o, ks in zip(objects, keys):
        before = tuple(k for a in o.after for k in by_name.get(a, ()))
        if before:
            out.update({k: before for k in ks})
    return out


def waves(keys: Sequence[str], after: Mapping[str, Collection[str]]) -> list[list[str]]:
    """``keys`` in rounds: a key goes in the round after the last of its
    predecessors among ``keys`` (those outside ``keys`` are taken as
    started); order within a round as in ``keys``.  A cycle (refused at
    submit) puts what is left in one last round rather than loop."""
    left = list(dict.fromkeys(keys))
    if not after:  # (no key follows another: one round)
        return [left] if left else []
    inside = set(left)
    done: set[str] = set()
    out: list[list[str]] = []
    while left:
        wave = [k for k in left if all(p in done or p not in inside for p in after.get(k, ()))]
        if not wave:
            wave = left
        out.append(wave)
        done.update(wave)
        left = [k for k in left if k not in done]
    return out


# --- stages: after work that ends ------------------------------------------------------

Ends = Callable[[ObjectRequest], bool]
"""Is this object work that ends (its class runs runner work)?"""


def this_run(history: Sequence[RequestEvent], instances: Iterable[InstanceInfo]) -> list[InstanceInfo]:
    """The instances of the request's current run: started since it last went
    back to ``pending`` (a requeued request starts its graph afresh)."""
    since = max((e.at for e in history if e.state == "pending"), default=float("-inf"))
    return [i for i in instances if i.started_at >= since]


def ready(objects: Sequence[ObjectRequest], run: Sequence[InstanceInfo], ends: Ends) -> list[int]:
    """The indices of the objects not started in ``run`` that may start now:
    each object it follows ended well (work that ends) or runs or starts with
    it (anything else).  With no instances: the first stage."""
    by_name = {name_of(o): o for o in objects}
    started = {i.name for i in run if i.name is not None}
    go: set[str] = set()
    changed = True
    while changed:
        changed = False
        for o in objects:
            n = name_of(o)
            if n in started or n in go:
                continue
            if all(_ended_well(by_name[p], run) if ends(by_name[p]) else (p in started or p in go)
                   for p in o.after if p in by_name):
                go.add(n)
                changed = True
    return [k for k, o in enumerate(objects) if name_of(o) in go]


def _ended_well(obj: ObjectRequest, run: Sequence[InstanceInfo]) -> bool:
    mine = [i for i in run if i.name == name_of(obj)]
    return len(mine) >= obj.count and all(i.result is not None and i.result.state == "completed" for i in mine)


def unstarted(objects: Sequence[ObjectRequest], run: Sequence[InstanceInfo]) -> list[str]:
    """The objects with no instance in ``run`` (none when no object uses ``after``)."""
    if not any(o.after for o in objects):
        return []
    started = {i.name for i in run}
    return [name_of(o) for o in objects if name_of(o) not in started]


def stalled(run: Sequence[InstanceInfo]) -> bool:
    """Did an instance of ``run`` end other than well (failed, timed out,
    stopped, its host lost)?  Then what waits for its stage never starts."""
    return any(i.state == "lost" or (i.result is not None and i.result.state != "completed") for i in run)


def waits(objects: Sequence[ObjectRequest], run: Sequence[InstanceInfo]) -> bool:
    """Do objects of a running request wait for their stage (and may still get it)?"""
    return bool(unstarted(objects, run)) and not stalled(run)
