"""The submission order a fcfs or easy queue walks, kept between passes
(``RequestQueue._submit_order``: the last answer, without the requests that
left pending and with those that came since put in place) is the order sorted
afresh, whatever came, left, came back or settled in between."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.models import ClusterSpec, Identity, ObjectRequest, SchedulingRequest
from legionrm.scheduler.priority import SitePolicy, site_settings
from legionrm.scheduler.queue import _SUBMIT_ORDER, RequestQueue
from legionrm.scheduler.requests import RequestBook
from legionrm.testing import FakeClock

steps = st.lists(st.tuples(st.sampled_from(("submit", "submit", "try", "fail", "cancel", "settle", "order", "tick")),
                           st.integers(0, 30)), max_size=60)


@settings(max_examples=150, deadline=None)
@given(steps)
def test_the_kept_submission_order_is_the_order_sorted_afresh(script) -> None:
    clock = FakeClock()
    book = RequestBook(clock)
    queue = RequestQueue(book, SitePolicy(site_settings(ClusterSpec()), None, clock, 8.0), "submit")
    made = 0
    for op, n in script:
        entries = book.entries()
        pick = entries[n % len(entries)] if entries else None
        if op == "submit":  # (ids not in time order: the order is by time, then id)
            made += 1
            book.add(SchedulingRequest(request_id=f"r{(made * 7) % 31:02d}-{made}", identity=Identity(user="u"),
                                       objects=(ObjectRequest(class_name="C", cpus=1),)))
        elif op == "tick":
            clock.advance(float(n % 2))  # (often the same time: the id breaks the tie)
        elif pick is None:
            continue
        elif op == "try" and pick.state == "pending":
            book.move(pick, "admitted", "tried")
        elif op == "fail" and pick.state == "admitted":
            book.move(pick, "pending", f"not now {n}")
        elif op == "cancel" and not pick.final:
            book.cancel(pick, "cancelled")
        elif op == "settle":
            book.settle([pick])
        elif op == "order":  # (asked now and then: several changes come between two passes)
            assert queue.order() == sorted(book.in_state("pending"), key=_SUBMIT_ORDER)
    assert queue.order() == sorted(book.in_state("pending"), key=_SUBMIT_ORDER)
