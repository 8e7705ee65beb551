"""The gateway's batching core: every caller gets its own reply, never another's; a batch that fails
answers each of its callers with the failure."""

from __future__ import annotations

import asyncio
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.gateway.intake import BatchMismatch, Collector


class Boom(Exception):
    pass


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


@settings(max_examples=60, deadline=None)
@given(calls=st.lists(st.tuples(st.integers(0, 3), st.booleans()), min_size=1, max_size=60),
       max_batch=st.integers(1, 8), window=st.sampled_from([0.0, 0.001]), linger=st.sampled_from([0.0, 0.002]),
       seed=st.integers(0, 1000))
def test_each_caller_gets_the_reply_to_its_own_item(calls, max_batch, window, linger, seed) -> None:
    """Callers arrive at random moments; ``send`` answers a batch after a random delay, an item marked
    bad with an exception of its own.  Each caller's reply (or error) is its own item's."""
    rng = random.Random(seed)
    sizes: list[int] = []
    flying = [0, 0]

    async def send(items: list[tuple[int, bool]]) -> list[object]:
        sizes.append(len(items))
        flying[0] += 1
        flying[1] = max(flying[1], flying[0])
        await asyncio.sleep(rng.random() / 500)
        flying[0] -= 1
        return [Boom(n) if bad else ("reply", n) for n, bad in items]

    async def main() -> None:
        c = Collector(send, window_s=window, max_batch=max_batch, linger_s=linger)

        async def one(n: int, delay: int, bad: bool) -> None:
            await asyncio.sleep(delay / 1000)
            if bad:
                with pytest.raises(Boom) as got:
                    await c.call((n, True))
                assert got.value.args == (n,)
            else:
                assert await c.call((n, False)) == ("reply", n)

        await asyncio.gather(*(one(n, d, bad) for n, (d, bad) in enumerate(calls)))
        assert c.items == len(calls) == sum(sizes) and c.batches == len(sizes)

    run(main())
    assert max(sizes) <= max_batch and flying[1] == 1


@pytest.mark.parametrize("answer", ["raises", "short", "long"])
def test_a_failed_batch_answers_every_caller_with_the_failure(answer) -> None:
    async def send(items: list[int]) -> list[int]:
        await asyncio.sleep(0.001)
        if answer == "raises":
            raise Boom("the scheduler is down")
        return items[:-1] if answer == "short" else [*items, 0]

    async def main() -> list[object]:
        c = Collector(send, window_s=0.001)
        return await asyncio.gather(*(c.call(n) for n in range(10)), return_exceptions=True)

    got = run(main())
    want = Boom if answer == "raises" else BatchMismatch
    assert len(got) == 10 and all(isinstance(g, want) for g in got)


def test_a_send_that_fails_as_it_starts_answers_every_caller_with_the_failure() -> None:
    def send(items: list[int]) -> asyncio.Future[list[int]]:
        raise Boom("no such scheduler")

    async def main() -> list[object]:
        c = Collector(send, window_s=0.001)
        return await asyncio.gather(*(c.call(n) for n in range(10)), return_exceptions=True)

    got = run(main())
    assert len(got) == 10 and all(isinstance(g, Boom) for g in got)


def test_a_batch_is_sent_the_moment_it_goes() -> None:
    """``send`` is called as the batch goes, before the loop runs what was ready beside it (the calls
    that reached the gateway meanwhile): a batch is not held back while they are read."""
    log: list[object] = []

    def send(items: list[int]) -> asyncio.Future[list[int]]:
        log.append(("sent", list(items)))
        answered = asyncio.get_running_loop().create_future()
        answered.set_result([n * 2 for n in items])
        return answered

    async def main() -> int:
        c = Collector(send)
        loop = asyncio.get_running_loop()
        first = loop.create_task(c.call(1))
        loop.call_soon(log.append, "read another call")  # ready beside the call that sends the batch
        return await first

    assert run(main()) == 2
    assert log == [("sent", [1]), "read another call"]


def test_calls_arriving_together_go_as_one_batch() -> None:
    sizes: list[int] = []

    async def send(items: list[int]) -> list[int]:
        sizes.append(len(items))
        await asyncio.sleep(0.01)
        return [n * 2 for n in items]

    async def main() -> list[int]:
        c = Collector(send)
        return list(await asyncio.gather(*(c.call(n) for n in range(50))))

    assert run(main()) == [n * 2 for n in range(50)]
    assert sizes == [1, 49]  # the first goes at once, alone; the rest waited for its round trip


@settings(max_examples=60, deadline=None)
@given(calls=st.lists(st.integers(0, 3), min_size=1, max_size=60), max_batch=st.integers(1, 8),
       in_flight=st.integers(1, 3), seed=st.integers(0, 1000))
def test_batches_in_flight_together_each_answer_their_own_and_none_is_smaller(calls, max_batch, in_flight,
                                                                                seed) -> None:
    """With ``in_flight`` batches at a time: each caller gets its own reply, never more batches fly at once,
    and a batch that goes beside others is as big as the smallest of them (or ``max_batch``)."""
    rng = random.Random(seed)
    flying: list[int] = []
    most = [0]

    async def send(items: list[int]) -> list[object]:
        flying.append(len(items))
        most[0] = max(most[0], len(flying))
        await asyncio.sleep(rng.random() / 500)
        flying.remove(len(items))
        return [("reply", n) for n in items]

    async def main() -> None:
        c = Collector(send, max_batch=max_batch, in_flight=in_flight)
        go = c._go

        def checked_go(loop: asyncio.AbstractEventLoop) -> None:  # the size rule, when a batch is decided
            # (checked here, not in send: a batch in flight may end between the decision and the send)
            if c._flying:
                assert min(len(c._waiting), max_batch) >= min(max_batch, *c._flying)
            go(loop)

        c._go = checked_go  # type: ignore[method-assign]

        async def one(n: int, delay: int) -> None:
            await asyncio.sleep(delay / 1000)
            assert await c.call(n) == ("reply", n)

        await asyncio.gather(*(one(n, d) for n, d in enumerate(calls)))
        assert c.items == len(calls)

    run(main())
    assert 1 <= most[0] <= in_flight


def rounds(callers: int, calls: int, linger: float, leave_after: dict[int, int] | None = None) -> list[int]:
    """``callers`` callers, each making ``calls`` calls one after another (the next once the last is
    answered; caller k only ``leave_after[k]``); the size of each batch that went."""
    sizes: list[int] = []

    async def send(items: list[int]) -> list[int]:
        sizes.append(len(items))
        await asyncio.sleep(0.002)
        return [n + 1 for n in items]

    async def main() -> None:
        c = Collector(send, linger_s=linger)

        async def caller(k: int) -> None:
            for n in range((leave_after or {}).get(k, calls)):
                assert await asyncio.wait_for(c.call(n * 1000 + k), 60) == n * 1000 + k + 1
                await asyncio.sleep(0)  # a caller's own work between its calls

        await asyncio.gather(*(caller(k) for k in range(callers)))
        assert c.items == sum(sizes)

    run(main())
    return sizes


def test_a_batch_lingers_for_the_callers_the_last_one_answered() -> None:
    """Each caller has one call out at a time: without lingering the batches split the callers between
    them; lingering, each batch after the first rounds carries every caller."""
    plain, lingering = rounds(8, 6, 0.0), rounds(8, 6, 0.2)
    assert sum(plain) == sum(lingering) == 48
    # the first call goes alone, the 7 others wait for it; then all 8, round after round (the first
    # caller, one call ahead, is done before the last round)
    assert lingering == [1, 8, 8, 8, 8, 8, 7] and len(plain) > len(lingering)


def test_a_lone_caller_never_waits_for_anyone() -> None:
    """One caller, however long the linger: each call goes at once (the test would hang otherwise)."""
    assert rounds(1, 5, 3600.0) == [1, 1, 1, 1, 1]


def test_a_caller_that_left_is_waited_for_once_then_no_more() -> None:
    """A caller stops calling: the next batch goes when the linger is over, and the ones after it go
    without it, as soon as the callers still there are back."""
    sizes = rounds(4, 6, 0.05, leave_after={3: 2})
    assert sum(sizes) == 3 * 6 + 2
    first = sizes.index(3)  # the round after the leave: the three still there, and so on to the end
    assert sizes[0] == 1 and sizes[1:first] == [4] * (first - 1)
    assert all(n == 3 for n in sizes[first:-1]) and sizes[-1] in (2, 3)  # (the first caller, a call ahead, ends first)


def test_a_call_after_a_quiet_spell_goes_at_once() -> None:
    """The linger counts from the last batch's answer: a call made after it is over waits for no one,
    however many callers the last round had."""
    sizes: list[int] = []

    async def send(items: list[int]) -> list[int]:
        sizes.append(len(items))
        await asyncio.sleep(0.001)
        return items

    async def main() -> None:
        c = Collector(send, linger_s=0.05)
        await asyncio.gather(*(c.call(n) for n in range(5)))  # a round of five: [1, 4]
        await asyncio.sleep(0.2)  # quiet, longer than the linger
        late = asyncio.ensure_future(c.call(99))
        await asyncio.sleep(0)  # one turn of the loop: its batch went (a lingering one would not have)
        assert c.batches == 3 and sizes == [1, 4]
        assert await late == 99 and sizes == [1, 4, 1]

    run(main())
