"""The running work's stretches, kept between passes by request and instance map
(:class:`RunningUses`), are those read afresh from the book, in the same order, as
work starts and ends; and a user's usage sums them in that order."""

from __future__ import annotations

from legionrm.models import Identity, InstanceRef, ObjectRequest, SchedulingRequest
from legionrm.scheduler.priority.site import RunningUses, _uses
from legionrm.scheduler.priority.usage import UsageLedger, Use, decayed_cpu_seconds
from legionrm.scheduler.requests import RequestBook


def fresh(entries: list) -> list:  # type: ignore[type-arg]
    return [u for e in entries if e.state == "running" for u in _uses(e)]


def test_kept_stretches_are_the_fresh_ones_as_work_starts_and_ends() -> None:
    now = [100.0]
    book = RequestBook(lambda: now[0])
    kept = RunningUses()
    for k in range(4):
        request = SchedulingRequest(request_id=f"r{k}", identity=Identity(user=f"u{k % 2}"), objects=(
            ObjectRequest(class_name="A", count=2, cpus=1.5), ObjectRequest(class_name="B", count=1, cpus=3)))
        entry = book.add(request)
        book.move(entry, "admitted", "")
        book.move(entry, "placing", "")
        refs = [InstanceRef(instance_id=f"r{k}-{i}", class_name="AB"[i // 2], host="h", token_id=f"t{k}{i}",
                            user=f"u{k % 2}", started_at=now[0] + i) for i in range(3)]
        book.attach(entry, refs, "running", "started")
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
