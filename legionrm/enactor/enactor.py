"""The Enactor: negotiate a ranked list of schedules into reservations and
running instances (Legion manual 8.2.2, 8.2.3 and 8.2.5).

The algorithm, as the manual states it and as this module runs it:

1. Iterate over the master schedules in order.  For a master, request every
   placement's host reservation and (when the placement names a vault) vault
   reservation, all in one parallel round (the port sends one batched call
   per host group).
2. If any reservation is refused, or its resource is dead, look at that
   master's delta schedules in order.  A delta is **applicable** when it
   replaces at least one mapping that is failing right now.  Applying it:
   the target mapping is the current mapping with the delta's placements
   substituted; reservations that conflict with the target (held for a key
   the delta moves to another resource or to other resources) are released
   first, every reservation the target still uses is **kept**, and only the
   missing ones are requested.  Failing mappings the delta does not replace
   are not asked again (their resources just said no).
   If every reservation the delta needed was granted, the delta is adopted:
   it becomes the current mapping and the failures it replaced are cleared.
   Otherwise the current mapping stays and the next delta is tried.  Deltas
   therefore compose: two failing keys can be repaired by two one-key deltas.
3. When no failure is left, the master succeeded.  When the deltas run out
   with failures left, everything held for this master is released and the
   next master is tried.  When every master failed, the result lists, per
   master, every placement failure (key, resource, code, reason).
4. On success the scheduler confirms (an approval callback; default
   approve).  If it declines, everything is released and the refusal is
   reported.  Then every instance is created through its class object with
   the tokens, in rounds by the request's ``after`` graph (a key only once
   every key it follows runs: :mod:`legionrm.enactor.after`).  A host may
   still veto at start: the vetoed mappings are repaired with the master's
   applicable deltas (ones that do not move an instance already started),
   reserving anew, and what follows them waits for the repaired start; if
   none works, the instances started are stopped, everything is released
   and the failure reported.

Reservation thrashing (releasing a reservation and asking for the same
resource for the same mapping again) is counted in ``EnactResult.thrash``;
keeping every reservation a delta still uses keeps it at zero in the common
case.  Tokens carry a timeout, so a crashed enactor leaks nothing for long;
a live one cancels what it holds on every failure path, exceptions included
(what one enactment holds, and letting go of it: :mod:`legionrm.enactor.holding`).
Request ids are ``<request_id>/<key>/<host|vault>/<n>`` where ``n`` counts
the requests this enactment made for that slot, so replaying an enactment
sends the same ids and resources answer them idempotently.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Literal

from legionrm import codes
from legionrm.auth.attest import attestation_key, reservation_of
from legionrm.enactor.after import waves
from legionrm.enactor.ports import NO_ARGS, CreateItem, ResourcePort
from legionrm.enactor.held import start_reserved
from legionrm.enactor.holding import Held, Holding, Run
from legionrm.enactor.mapping import (
    RequestShape,
    Slot,
    apply_delta,
    by_key,
    delta_wave,
    missing_slots,
    plan_failure,
    slot_ask,
    slot_spec,
    slots_of,
)
from legionrm.errors import EnactmentError, LegionError
from legionrm.models import (
    EnactRequest,
    EnactResult,
    InstanceRef,
    MasterSchedule,
    Placement,
    PlacementFailure,
    Refusal,
    ReservationRequest,
    ReservationToken,
    ReservedStart,
    ScheduleAttempt,
    ScheduleProposal,
)

Approver = Callable[[ScheduleProposal], "bool | Refusal"]


def approve_all(proposal: ScheduleProposal) -> bool:
    """The default confirmation: the scheduler approves every schedule."""
    return True


class Enactor(Holding):
    """The enactor core: pure Python, talks to resources only through ``port``.

    ``clock`` is the time source used to notice expired tokens (tests pass a
    fake clock); ``approve`` is the default confirmation callback;
    ``min_token_life_s`` treats a token that expires within that margin as
    already expired (so it is renewed before it is used); ``max_renewals``
    bounds how many rounds of renewing expired tokens one schedule may take.

    Thread-safe: all per-enactment state lives in a private run object, so
    an actor may run several enactments at once in threads.
    """

    def __init__(
        self,
        port: ResourcePort,
        *,
        clock: Callable[[], float] = time.time,
        approve: Approver = approve_all,
        name: str = "enactor",
        min_token_life_s: float = 0.0,
        max_renewals: int = 2,
    ) -> None:
        self.port = port
        self.clock = clock
        self.approve = approve
        self.name = name
        self.min_token_life_s = min_token_life_s
        self.max_renewals = max_renewals
        self._lock = threading.Lock()
        self.stats = {"enactments": 0, "succeeded": 0, "reservations_made": 0, "thrash": 0}

    # --- public ---------------------------------------------------------

    def enact_schedule(self, schedules: EnactRequest, *, approve: Approver | None = None) -> EnactResult:
        """Negotiate ``schedules`` (masters in order, deltas per master).

        Returns ``EnactResult(ok=True, master=i, placements, host_tokens,
        vault_tokens, instances)`` for the first master that could be fully
        reserved (and started, when ``schedules.create``), or ``ok=False``
        with every master's failures in ``attempts``.  On any failure, and
        when an exception escapes, every reservation made by this call has
        been cancelled and every instance it started stopped.  Port
        exceptions are re-raised as :class:`EnactmentError`.  Deterministic
        for a deterministic port.  Not idempotent by itself, but a repeat
        sends the same request ids, so resources answer it idempotently.
        """
        approver = approve or self.approve
        run = Run(request=schedules)
        result: EnactResult | None = None
        try:
            result = self._enact(run, approver)
            return result
        except LegionError:
            raise
        except Exception as exc:  # a broken port or resource: report, after cleanup
            raise EnactmentError(f"enact_schedule {schedules.request_id!r}: {type(exc).__name__}: {exc}") from exc
        finally:
            if result is None or not result.ok:
                self._rollback(run)
            with self._lock:
                self.stats["enactments"] += 1
                self.stats["succeeded"] += int(bool(result and result.ok))
                self.stats["reservations_made"] += run.made
                self.stats["thrash"] += run.thrash

    def start_reserved(self, held: ReservedStart) -> EnactResult:
        """Start (or release) what an advance reservation holds: see :mod:`legionrm.enactor.held`."""
        return start_reserved(self.port, held)

    # --- the algorithm ----------------------------------------------------

    def _enact(self, run: Run, approver: Approver) -> EnactResult:
        req = run.request
        attempts: list[ScheduleAttempt] = []
        for mi, master in enumerate(req.masters):
            ok, mapping, failures, tried, used = self._negotiate_master(run, master)
            if not ok:
                attempts.append(ScheduleAttempt.trusted(master=mi, deltas_tried=tried, failures=tuple(failures), succeeded=False))
                self._release_all(run)
                continue
            # Step 6: confirm with the scheduler before anything is started.
            verdict = self._confirm(run, approver, mi, mapping, "reserve")
            if verdict is not None:
                attempts.append(
                    ScheduleAttempt.trusted(master=mi, deltas_tried=tried, failures=tuple(failures) + (verdict,), succeeded=False)
                )
                return self._result(run, False, attempts)
            if req.create:
                ok, mapping, more, tried = self._start_all(run, mi, master, mapping, used, tried, approver)
                failures += more
                if not ok:
                    attempts.append(ScheduleAttempt.trusted(master=mi, deltas_tried=tried, failures=tuple(failures), succeeded=False))
                    return self._result(run, False, attempts)
            attempts.append(ScheduleAttempt.trusted(master=mi, deltas_tried=tried, failures=tuple(failures), succeeded=True))
            return self._result(run, True, attempts, master=mi, mapping=mapping)
        return self._result(run, False, attempts)

    def _negotiate_master(
        self, run: Run, master: MasterSchedule
    ) -> tuple[bool, dict[str, Placement], list[PlacementFailure], int, set[int]]:
        """Reserve one master, repairing failures with its deltas.

        Returns (ok, final mapping, every failure met, deltas tried, indexes
        of the deltas used up).  On ok, every slot of the mapping is held."""
        mapping = {p.key: p for p in master.placements}
        failures: list[PlacementFailure] = []
        failing = self._reconcile(run, mapping, list(mapping), failures)
        tried = 0
        used: set[int] = set()
        while True:
            if not failing:
                if not tried:  # (held in full by the round just made, which ends by dropping what expired)
                    break
                # Time passed during the deltas: renew anything that expired meanwhile.
                failing = self._reconcile(run, mapping, list(mapping), failures)
                if not failing:
                    break
            wave = delta_wave(master.deltas, used, failing.keys())
            if not wave:
                break
            target, good = mapping, []
            for di, delta in wave:
                used.add(di)
                tried += 1
                applied = apply_delta(target, delta)
                if applied is None:
                    failures.append(plan_failure(delta))
                    continue
                target = applied
                good.append(delta)
            if not good:
                continue
            keys = frozenset().union(*(d.keys for d in good))
            # Ask for the deltas' own mappings and for any mapping that lost its
            # reservation earlier; not again for failing keys they leave alone.
            ask = [k for k in target if k in keys or k not in failing]
            new_fail = self._reconcile(run, target, ask, failures)
            for delta in good:
                if not (new_fail.keys() & delta.keys):
                    mapping = apply_delta(mapping, delta)  # adopted: part of the current mapping now
                    failing = {k: v for k, v in failing.items() if k not in delta.keys}
            failing.update({k: v for k, v in new_fail.items() if k not in keys})
        return (not failing, mapping, failures, tried, used)

    def _reconcile(
        self, run: Run, target: dict[str, Placement], ask, failures: list[PlacementFailure]
    ) -> dict[str, list[PlacementFailure]]:
        """Make the held reservations match ``target`` for the keys in ``ask``.

        Releases held reservations that conflict with ``target`` (any key),
        keeps every one that matches, drops expired ones, and requests what is
        missing for ``ask`` in one parallel round.  Repeats (up to
        ``max_renewals`` times) while tokens expired during the round.
        Returns the keys that failed, with why (also appended to ``failures``).
        """
        ask = list(ask)
        # 1. release what conflicts with the target (a slot held for the very placement the target has does not)
        conflict = [
            s
            for s, h in run.held.items()
            if (p := target.get(s[0])) is not h.placement and (p is None or slot_spec(p, s[1]) != h.spec)
        ]
        self._release(run, conflict)
        for _round in range(self.max_renewals + 1):
            self._drop_expired(run)
            missing = missing_slots(target, ask, run.held)
            if not missing:
                return {}
            failing = self._reserve(run, target, missing, failures)
            if failing:
                return failing
        # still expiring after every renewal round: fail those mappings
        self._drop_expired(run)
        failing: dict[str, list[PlacementFailure]] = {}
        for (k, kind), sp in slots_of(target, ask):
            if (k, kind) not in run.held:
                f = PlacementFailure(
                    key=k, resource=sp[0], code=codes.TOKEN_EXPIRED, reason="token expired again after renewal"
                )
                failing.setdefault(k, []).append(f)
                failures.append(f)
        return failing

    def _reserve(
        self, run: Run, target: dict[str, Placement], missing: list[tuple[Slot, tuple]], failures
    ) -> dict[str, list[PlacementFailure]]:
        req = run.request
        requests: list[ReservationRequest] = []
        groups: list[str | None] = []
        shape = run.shape = run.shape or RequestShape(req)
        sent, durations, attestations = run.sent, req.duration_s, req.attestations
        for slot, sp in missing:
            k, kind = slot
            p = target[k]
            n = sent.get(slot, 0)
            sent[slot] = n + 1
            res = reservation_of(req.request_id, k, kind)
            host = kind == "host"
            requests.append(shape.request(
                request_id=f"{res}/{n}", resource=sp[0], resources=p.resources if host else slot_ask(p, kind),
                vault=p.vault if host else None, duration_s=by_key(durations, p) if durations else None,
                attestation=attestations.get(attestation_key(sp[0], res)) if attestations else None))
            groups.append(p.group if host else None)  # a group carries hosts only
        answers = self.port.reserve(requests, groups)
        if len(answers) != len(requests):
            raise EnactmentError(f"port answered {len(answers)} of {len(requests)} reservation requests")
        failing: dict[str, list[PlacementFailure]] = {}
        for ((k, kind), sp), rq, ans in zip(missing, requests, answers):
            if isinstance(ans, ReservationToken):
                run.made += 1
                if run.released and (rq.resource, k, kind) in run.released:
                    run.thrash += 1
                run.held[(k, kind)] = Held(ans, sp, target[k])
                if ans.expires_at < run.soonest:
                    run.soonest = ans.expires_at
            else:
                refusal = ans if isinstance(ans, Refusal) else Refusal(code=codes.RESOURCE_DEAD, reason=repr(ans), by=rq.resource)
                f = PlacementFailure(key=k, resource=rq.resource, code=refusal.code, reason=refusal.reason,
                                     lasting=refusal.lasting)
                failing.setdefault(k, []).append(f)
                failures.append(f)
        return failing

    # --- approval and start ---------------------------------------------------

    def _confirm(
        self, run: Run, approver: Approver, mi: int, mapping: dict[str, Placement], stage: Literal["reserve", "start"]
    ) -> PlacementFailure | None:
        """Ask the scheduler to confirm; None when it approves, else why not."""
        proposal = ScheduleProposal.trusted(  # (the request's own, validated placements)
            request_id=run.request.request_id, master=mi, placements=tuple(mapping.values()), stage=stage
        )
        verdict = approver(proposal)
        if verdict is True or (verdict and not isinstance(verdict, Refusal)):
            return None
        code, reason, by = codes.APPROVAL_DECLINED, "the scheduler declined the schedule", "scheduler"
        if isinstance(verdict, Refusal):
            code, reason, by = verdict.code, verdict.reason, verdict.by or by
        return PlacementFailure(key="*", resource=by, code=code, reason=reason, stage="plan")

    def _start_all(
        self,
        run: Run,
        mi: int,
        master: MasterSchedule,
        mapping: dict[str, Placement],
        used: set[int],
        tried: int,
        approver: Approver,
    ) -> tuple[bool, dict[str, Placement], list[PlacementFailure], int]:
        """Create every instance through its class object (Legion's steps 7-8).

        A veto at start (or a token that expired before use) is repaired with
        the master's unused deltas that replace a vetoed mapping and move no
        started instance: reserve anew, confirm the revised mapping, start the
        delta's instances, repeat.  Returns (ok, mapping, failures, tried)."""
        failures: list[PlacementFailure] = []
        started: set[str] = set()
        vetoed: dict[str, list[PlacementFailure]] = {}
        pending = list(mapping)
        deferred: list[str] = []  # after keys whose predecessors have not started yet (one was vetoed)
        after = run.request.after
        while True:
            if pending:
                # Renew any token that expired since it was granted, then start.
                lost = self._reconcile(run, mapping, pending, failures)
                vetoed.update(lost)
                # in rounds: a key is created only once every key it is after runs (the request's after graph)
                for wave in waves([k for k in pending if k not in lost], after):
                    if after:
                        waiting = vetoed.keys() | set(deferred)  # predecessors that do not run (yet)
                        ready = [k for k in wave if not any(p in waiting for p in after.get(k, ()))]
                        deferred += [k for k in wave if any(p in waiting for p in after.get(k, ()))]
                    else:  # (nothing follows anything: the wave is ready)
                        ready = wave
                    self._start_wave(run, mapping, ready, started, vetoed, failures)
            if not vetoed:
                return True, mapping, failures, tried
            pending = []
            for di, delta in enumerate(master.deltas):
                if di in used or not (delta.keys & vetoed.keys()) or (delta.keys & started):
                    continue
                used.add(di)
                tried += 1
                target = apply_delta(mapping, delta)
                if target is None:
                    failures.append(plan_failure(delta))
                    continue
                new_fail = self._reconcile(run, target, [k for k in target if k in delta.keys], failures)
                if new_fail:
                    continue
                verdict = self._confirm(run, approver, mi, target, "start")
                if verdict is not None:
                    failures.append(verdict)
                    return False, mapping, failures, tried
                mapping = target
                pending = [k for k in target if k in delta.keys] + [k for k in deferred if k not in delta.keys]
                deferred = []
                vetoed = {k: v for k, v in vetoed.items() if k not in delta.keys}
                break
            if not pending:
                return False, mapping, failures, tried

    def _start_wave(self, run: Run, mapping: dict[str, Placement], ready: list[str], started: set[str],
                    vetoed: dict[str, list[PlacementFailure]], failures: list[PlacementFailure]) -> None:
        """Create the instances of ``ready`` in one batch; the started join
        ``started``, the refused ``vetoed`` (their host token released: a
        host that vetoed a start is not asked again on that token, so a
        delta that keeps the host reserves anew)."""
        items = [self._create_item(run, mapping[k]) for k in ready]
        answers = self.port.create_instances(items) if items else []
        if len(answers) != len(items):
            raise EnactmentError(f"port answered {len(answers)} of {len(items)} create requests")
        newly: list[str] = []
        for k, ans in zip(ready, answers):
            if isinstance(ans, InstanceRef):
                run.started.append(ans)
                started.add(k)
            else:
                r = ans if isinstance(ans, Refusal) else Refusal(code=codes.RESOURCE_DEAD, reason=repr(ans))
                f = PlacementFailure(key=k, resource=r.by or mapping[k].host, code=r.code, reason=r.reason,
                                     stage="start", lasting=r.lasting)
                failures.append(f)
                vetoed[k] = [f]
                newly.append(k)
        self._release(run, [(k, "host") for k in newly if (k, "host") in run.held])

    def _create_item(self, run: Run, p: Placement) -> CreateItem:
        req, held, key = run.request, run.held, p.key
        slot = (key, "start")
        n = run.sent.get(slot, 0)
        run.sent[slot] = n + 1
        vault = held.get((key, "vault")) if p.vault is not None else None  # (a vault slot only for a vault)
        args = by_key(req.args, p) if req.args else None
        return CreateItem(  # (positional: request_id, key, class_name, host, vault, tokens, holder, args, group)
            f"{req.request_id}/{key}/start/{n}", key, p.class_name, p.host, p.vault, held[(key, "host")].token,
            vault.token if vault else None, req.holder, args or NO_ARGS, p.group)

    def _result(
        self,
        run: Run,
        ok: bool,
        attempts: list[ScheduleAttempt],
        *,
        master: int | None = None,
        mapping: dict[str, Placement] | None = None,
    ) -> EnactResult:
        if not ok:
            self._rollback(run)
            return EnactResult.trusted(  # (every part made here, of the models' types)
                ok=False,
                host_tokens={},
                vault_tokens={},
                attempts=tuple(attempts),
                reservations_made=run.made,
                reservations_released=run.n_released,
                thrash=run.thrash,
            )
        assert mapping is not None
        return EnactResult.trusted(
            ok=True,
            master=master,
            placements=tuple(mapping.values()),
            host_tokens={k: h.token for (k, kind), h in run.held.items() if kind == "host"},
            vault_tokens={k: h.token for (k, kind), h in run.held.items() if kind == "vault"},
            attempts=tuple(attempts),
            reservations_made=run.made,
            reservations_released=run.n_released,
            thrash=run.thrash,
            instances=tuple(run.started),
        )
