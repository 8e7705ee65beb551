"""The running work's stretches, kept between passes by request and instance map
(:class:`RunningUses`), are those read afresh from the book, in the same order, as
work starts and ends; and a user's usage sums them in that order."""

from __future__ import annotations

import math
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.models import Identity, InstanceRef, ObjectRequest, SchedulingRequest
from legionrm.scheduler.priority.site import RunningUses
from legionrm.scheduler.priority.usage import UsageLedger, Use, decayed_cpu_seconds
from legionrm.scheduler.requests import Entry, RequestBook
from tests.unit.scheduler.priority.books import run


def _uses(e: Entry) -> list[Use]:
    """``e``'s running instances as stretches of cpus from each one's start (its class's first object's cpus)."""
    cpus = {o.class_name: o.cpus for o in reversed(e.request.objects)}
    return [Use(e.user, cpus.get(ref.class_name, 0.0), ref.started_at, float("inf"))
            for iid in e.live_instances() if (ref := e.refs.get(iid)) is not None]


def fresh(entries: list[Entry]) -> list[Use]:
    return [u for e in entries if e.state == "running" for u in _uses(e)]


def test_kept_stretches_are_the_fresh_ones_as_work_starts_and_ends() -> None:
    now = [100.0]
    book = RequestBook(lambda: now[0])
    kept = RunningUses()
    for k in range(4):
        request = SchedulingRequest(request_id=f"r{k}", identity=Identity(user=f"u{k % 2}"), objects=(
            ObjectRequest(class_name="A", count=2, cpus=1.5), ObjectRequest(class_name="B", count=1, cpus=3)))
        run(book, request, [InstanceRef(instance_id=f"r{k}-{i}", class_name="AB"[i // 2], host="h", token_id=f"t{k}{i}",
                                        user=f"u{k % 2}", started_at=now[0] + i) for i in range(3)])
        now[0] += 10
        assert kept(book.entries()) == fresh(book.entries())
    first = kept(book.entries())
    assert all(a is b for a, b in zip(kept(book.entries()), first))  # (unchanged: the same stretches, kept)
    book.end_instances(book.get("r1"), ["r1-0"], "ended", "done")
    assert kept(book.entries()) == fresh(book.entries()) and len(kept(book.entries())) == len(first) - 1


def test_usage_sums_each_stretch_in_order() -> None:
    ledger = UsageLedger(3600.0)
    book_now = 5000.0
    assert ledger.usage(book_now, []) == {}
    uses = [Use("a", 2.0, 10.0, float("inf")), Use("a", 2.0, 10.0, float("inf")), Use("a", 0.5, 300.0, float("inf"))]
    want = 0.0
    for u in uses:
        want += decayed_cpu_seconds(u.cpus, u.start, u.end, book_now, 3600.0)
    assert ledger.usage(book_now, uses)["a"].decayed == want


def _loop_usage(ledger: UsageLedger, now: float, running: list[Use]) -> dict[str, tuple[float, float]]:
    """The ledger's usage as adding each stretch one by one (the reference the columns must match bit for bit)."""
    ledger._age(now)
    raw, dec = dict(ledger._raw), dict(ledger._decayed)
    for u in running:
        raw[u.user] = raw.get(u.user, 0.0) + u.cpus * max(0.0, min(u.end, now) - u.start)
        dec[u.user] = dec.get(u.user, 0.0) + decayed_cpu_seconds(u.cpus, u.start, u.end, now, ledger.half_life_s)
    return {user: (raw[user], dec.get(user, 0.0)) for user in raw}


_TIMES = st.floats(0.0, 1e6, allow_nan=False)
_USE = st.builds(Use, st.sampled_from(["a", "b", "c", "d"]), st.sampled_from([0.0, 0.5, 1.0, 3.0, 4.0, 17.25, -1.0]),
                 _TIMES, st.one_of(_TIMES, st.just(math.inf)))


@settings(max_examples=300, deadline=None)
@given(half_life=st.sampled_from([0.0, 3600.0, 7 * 86400.0, 12345.678]), finished=st.lists(_USE, max_size=6),
       passes=st.lists(st.tuples(st.floats(0.0, 2e6, allow_nan=False), st.lists(_USE, max_size=40)), min_size=1,
                       max_size=4))
def test_column_usage_is_the_one_by_one_sum_bit_for_bit(half_life: float, finished: list[Use],
                                                        passes: list[tuple[float, list[Use]]]) -> None:
    ledger = UsageLedger(half_life)
    passes = sorted(passes, key=lambda p: p[0])
    ledger.add(finished, passes[0][0])  # (a total to start from: the sum's order shows)
    for now, running in passes:
        got = {u: (v.raw, v.decayed) for u, v in ledger.usage(now, running).items()}
        want = _loop_usage(ledger, now, running)
        assert list(got) == list(want)  # the same users in the same order
        assert [struct.pack("<dd", *v) for v in got.values()] == [struct.pack("<dd", *v) for v in want.values()]
