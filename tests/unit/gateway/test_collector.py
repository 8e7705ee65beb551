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
       max_batch=st.integers(1, 8), window=st.sampled_from([0.0, 0.001]), seed=st.integers(0, 1000))
def test_each_caller_gets_the_reply_to_its_own_item(calls, max_batch, window, seed) -> None:
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
        c = Collector(send, window_s=window, max_batch=max_batch)

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
