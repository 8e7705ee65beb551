"""Calls that arrive together go as one: :class:`Collector`, the gateway's batching core.

Each caller awaits :meth:`Collector.call` with its item.  While no batch
is in flight, the items waiting go at once, as one batch (after
``window_s``, when set); while one is in flight, new items wait and go
together when it is answered.  So a quiet gateway sends each call alone,
with no delay, and a busy one sends as many per batch as arrived during the
last round trip: the batch grows with the load, as a group commit does.
With ``in_flight`` above 1, another batch may go while some are in flight
(at most ``in_flight`` at a time), but only once as many items wait as the
smallest batch in flight holds: batches overlap (the Scheduler commits one
while another's sync is in the kernel) without shrinking, since each batch
costs a round trip and a proof whatever its size.

With ``linger_s``, a batch waits (at most that long) for the callers the
last batch answered: once a batch is answered, the next one goes as soon as
as many items wait as were in play in that round (the batch's and those that
waited beside it), else ``linger_s`` after that answer.  Each of a fixed set
of callers has one call out at a time (a client waits for its answer before
its next call), so without it the batches alternate between the callers
just answered and the rest (about half the callers each); with it, each
batch carries as many of them as are back in time, and a batch -- its Ray
call, its proof, its sync -- is paid about once a round, not twice.  A lone caller waits for no one (one in play, one
waiting: it goes at once).

``send(items)`` is called the moment a batch goes, and what it awaits
answers the batch with one reply per item, in order: the
item's answer, or the exception it met (an exception instance is raised to
that caller alone).  What ``send`` does before it returns is done at once,
before the event loop turns to anything else: a ``send`` that starts its
call there (the intake's: signed and handed to Ray) sends the batch then,
not after the calls that reached the loop meanwhile have been read (a task
started for it would wait behind them).  The replies are matched to their callers one to one:
a reply list of the wrong length, or a ``send`` that fails, answers every
item of the batch with that failure, never one caller with another's
reply.  Pure asyncio: no Ray, no web framework.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Generic, TypeVar

T = TypeVar("T")

Send = Callable[[list[T]], Awaitable[Sequence[Any]]]


class BatchMismatch(RuntimeError):
    """A batch was answered with a number of replies other than its number of items."""


class Collector(Generic[T]):
    """Batches the items of concurrent :meth:`call`\\ s for ``send`` (see the module doc); at most
    ``max_batch`` items a batch, ``in_flight`` batches at a time."""

    def __init__(self, send: Send[T], *, window_s: float = 0.0, max_batch: int = 256, in_flight: int = 1,
                 linger_s: float = 0.0) -> None:
        if max_batch < 1 or in_flight < 1 or window_s < 0 or linger_s < 0:
            raise ValueError("max_batch and in_flight must be at least 1, window_s and linger_s at least 0")
        self._send, self.window_s, self.max_batch, self.in_flight = send, window_s, max_batch, in_flight
        self.linger_s = linger_s
        self._expect = 0  # how many items the next batch waits for (linger_s): the last round's callers
        self._lingering: asyncio.TimerHandle | None = None
        self._answered_at = 0.0  # when the last batch was answered (the loop's clock): the linger ends linger_s after
        self._waiting: list[tuple[T, asyncio.Future[Any]]] = []
        self._flying: list[int] = []  # the size of each batch in flight
        self._timer: asyncio.TimerHandle | None = None
        self.batches = 0
        """How many batches went (a figure for the benchmark and ``status``)."""
        self.items = 0
        """How many items went in them."""

    async def call(self, item: T) -> Any:
        """``item``'s reply, once its batch is answered (its exception raised)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._waiting.append((item, future))
        self._kick(loop)
        return await future

    def _may_go(self) -> bool:
        """May a batch of what waits go now (a slot free, and, beside another in flight, as big as it)?"""
        if not self._waiting or len(self._flying) >= self.in_flight:
            return False
        return not self._flying or len(self._waiting) >= min(self.max_batch, *self._flying)

    def _kick(self, loop: asyncio.AbstractEventLoop) -> None:
        """Send what waits if a batch may go now (or once the window passed, or the last round's callers
        are back)."""
        if not self._may_go():
            return
        if len(self._waiting) < min(self._expect, self.max_batch):  # the last round's callers are not all back
            if loop.time() < self._answered_at + self.linger_s:  # (a call after a quiet spell never waits)
                if self._lingering is None:
                    self._lingering = loop.call_at(self._answered_at + self.linger_s, self._linger_over, loop)
                return
            self._expect = 0
        if self.window_s > 0 and len(self._waiting) < self.max_batch:
            if self._timer is None:
                self._timer = loop.call_later(self.window_s, self._window_over, loop)
            return
        self._go(loop)

    def _linger_over(self, loop: asyncio.AbstractEventLoop) -> None:
        self._lingering = None
        self._expect = 0  # those that are back go now (and the window, if any, still applies)
        self._kick(loop)

    def _window_over(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        if self._may_go():
            self._go(loop)

    def _go(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._lingering is not None:
            self._lingering.cancel()
            self._lingering = None
        self._expect = 0
        batch, self._waiting = self._waiting[:self.max_batch], self._waiting[self.max_batch:]
        self._flying.append(len(batch))
        self.batches += 1
        self.items += len(batch)
        try:
            sent: Awaitable[Sequence[Any]] | BaseException = self._send([item for item, _ in batch])  # now: see the module doc
        except Exception as exc:  # noqa: BLE001 -- every caller of the batch hears it
            sent = exc
        loop.create_task(self._fly(batch, sent, loop))

    async def _fly(self, batch: list[tuple[T, asyncio.Future[Any]]], sent: Awaitable[Sequence[Any]] | BaseException,
                   loop: asyncio.AbstractEventLoop) -> None:
        try:
            try:
                if isinstance(sent, BaseException):
                    raise sent
                replies = list(await sent)
                if len(replies) != len(batch):
                    raise BatchMismatch(f"a batch of {len(batch)} calls was answered with {len(replies)} replies")
            except BaseException as exc:  # noqa: BLE001 -- every caller of the batch hears it
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                if isinstance(exc, asyncio.CancelledError):
                    raise
                return
            for (_, future), reply in zip(batch, replies):
                if future.done():  # its caller gave up (cancelled): nothing to answer
                    continue
                if isinstance(reply, BaseException):
                    future.set_exception(reply)
                else:
                    future.set_result(reply)
        finally:
            self._flying.remove(len(batch))
            if self.linger_s > 0 and not self._flying:  # this round's callers: those answered and those waiting
                self._expect, self._answered_at = len(batch) + len(self._waiting), loop.time()
            self._kick(loop)
