"""``list`` over several schedulers: each pages its own book after the same cursor, and
the gateway merges the pages (:func:`legionrm.gateway.routes_requests.merged_page`).
Paging on through the merged pages gives every request once, in the book's order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from legionrm.gateway.routes_requests import merged_page
from legionrm.models import RequestInfo
from legionrm.models.api import RequestList
from legionrm.scheduler.watch.settle import cursor_key, page_cursor


def page(book: list[RequestInfo], cursor: str | None, limit: int | None) -> RequestList:
    """One scheduler's page, as its book gives it: oldest first after the cursor, at most ``limit``."""
    after = cursor_key(cursor)
    rest = sorted((i for i in book if after is None or (i.submitted, i.id) > after), key=lambda i: (i.submitted, i.id))
    if limit is not None and len(rest) > limit:
        return RequestList(requests=tuple(rest[:limit]), next=page_cursor((rest[limit - 1].submitted, rest[limit - 1].id)))
    return RequestList(requests=tuple(rest))


books = st.lists(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 999)), max_size=25), min_size=1, max_size=4)


@given(books=books, limit=st.one_of(st.none(), st.integers(1, 7)), cap=st.one_of(st.none(), st.integers(1, 7)))
def test_paging_through_merged_pages_gives_every_request_once_in_order(books, limit, cap) -> None:
    """``limit``: the caller's page size; ``cap``: a scheduler's own most per page (``list --all``)."""
    schedulers = [[RequestInfo(id=f"s{n}-{rid}", user="u", state="pending", submitted=float(t))
                   for rid, t in {rid: t for t, rid in book}.items()] for n, book in enumerate(books)]
    want = sorted((i for s in schedulers for i in s), key=lambda i: (i.submitted, i.id))
    got: list[RequestInfo] = []
    cursor = None
    for _ in range(len(want) + 2):
        sizes = [x for x in (limit, cap) if x is not None]
        merged = merged_page([page(s, cursor, min(sizes) if sizes else None) for s in schedulers], limit)
        assert limit is None or len(merged.requests) <= limit
        got.extend(merged.requests)
        if merged.next is None:
            break
        assert merged.requests, "a page with more after it is never empty"
        cursor = merged.next
    assert [i.id for i in got] == [i.id for i in want]


def test_a_page_stops_where_a_scheduler_has_more() -> None:
    a = [RequestInfo(id=f"a{i}", user="u", state="pending", submitted=float(i)) for i in (1, 2, 3, 4)]
    b = [RequestInfo(id="b9", user="u", state="pending", submitted=9.0)]
    merged = merged_page([page(a, None, 2), page(b, None, 2)], None)
    assert [i.id for i in merged.requests] == ["a1", "a2"] and merged.next == page_cursor((2.0, "a2"))
