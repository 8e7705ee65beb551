"""The gateway's intake: the submits and cancels that arrive together go to
the Scheduler as one call, and its fast signature check.

:class:`Intake` holds one :class:`~legionrm.gateway.intake.collector.Collector`
per scheduler actor over the control plane: a batch is one ``intake_batch``
call, signed once by the gateway agent, its items the submits and cancels
that arrived while the last batch was in flight, each naming the user whose
signed HTTP call it is (:mod:`legionrm.scheduler.intake.door` checks them),
in the compact form of :mod:`legionrm.models.intake`.  The Scheduler writes
a batch with one durable write and answers each item; each caller gets its
own answer.  Two batches may be in flight (``in_flight``): the Scheduler
runs the second's checks and commit while the first's sync is in the kernel,
and one sync may answer both (:mod:`legionrm.state.groupsync`), so a call
waits less than one batch's round trip and sync more.  :mod:`~legionrm.gateway.intake.quickcheck` verifies the
signatures legionrm's own clients make without the general RFC 9421
parser.
"""

from __future__ import annotations

from collections.abc import Awaitable

from legionrm.gateway.intake.collector import BatchMismatch, Collector
from legionrm.gateway.plane import ControlPlane
from legionrm.models import SchedulingRequest
from legionrm.models.intake import Cancel, Cancelled, Submit, Submitted, pack_items, unpack_replies

IN_FLIGHT = 1
"""Batches in flight to one scheduler at a time (see the module doc).  One: measured on a quiet
box (`bench_gateway`, 20 x 50 pairs, alternating), two in flight ran 211-301 pairs/s at 4.6-6.3 ms
of CPU a pair against 265-295 pairs/s at 4.3-4.6 ms with one; the Collector still takes two."""

LINGER_S = 0.020
"""How long a batch waits for the callers the last one answered (:class:`Collector`'s ``linger_s``):
a Ray call costs the gateway and the Scheduler each over a millisecond of CPU whatever it carries,
and the callers answered are back within a round trip of theirs (under load often more than 10 ms:
20 ms took `bench_gateway`'s batches from 9.3 items to 10-15, ``benchmarks/README.md``)."""


class Intake:
    """Submits and cancels to each scheduler actor over ``plane``, in one stream of batches per
    scheduler (see the module doc); ``target`` names the default actor (``scheduler:NAME``)."""

    def __init__(self, plane: ControlPlane, target: str = "scheduler", *, window_s: float = 0.0,
                 max_batch: int = 256, in_flight: int = IN_FLIGHT, linger_s: float = LINGER_S) -> None:
        self.plane, self.target = plane, target
        self._window_s, self._max_batch, self._in_flight = window_s, max_batch, in_flight
        self._linger_s = linger_s
        self._collectors: dict[str, Collector[Submit | Cancel]] = {}

    def _collector(self, to: str) -> Collector[Submit | Cancel]:
        if to not in self._collectors:  # one per scheduler: a batch is one call to one actor
            def send(items: list[Submit | Cancel]) -> Awaitable[list[object]]:
                # started now, as the batch goes (see Collector).  None: the gateway agent signs the batch as
                # itself; each item names its user.  Packed: one text there and one bytes back cost Ray less
                # than the lists (legionrm.models.intake)
                return _unpacked(self.plane.start(None, to, "intake_batch", {"items": pack_items(items)}))  # type: ignore[arg-type]
            self._collectors[to] = Collector(send, window_s=self._window_s, max_batch=self._max_batch,
                                             in_flight=self._in_flight, linger_s=self._linger_s)
        return self._collectors[to]

    def counts(self) -> tuple[int, int]:
        """How many batches went to the schedulers, and how many items they carried (a figure for the
        benchmark: the larger the batch, the less a call pays of its Ray call, proof and sync)."""
        return (sum(c.batches for c in self._collectors.values()), sum(c.items for c in self._collectors.values()))

    async def submit(self, user: str, request: SchedulingRequest, to: str | None = None) -> Submitted:
        """``request`` submitted as ``user``'s to ``to`` (default: :attr:`target`); its refusal or error raised."""
        return await self._collector(to or self.target).call(  # type: ignore[no-any-return]
            Submit(user, request.model_dump_json()))

    async def cancel(self, user: str, request_id: str, reason: str, to: str | None = None) -> Cancelled:
        """``request_id`` cancelled by ``user`` at ``to`` (default: :attr:`target`); its refusal or error raised."""
        return await self._collector(to or self.target).call(Cancel(user, request_id, reason))  # type: ignore[no-any-return]


async def _unpacked(sent: Awaitable[bytes]) -> list[object]:
    """The replies of a batch's call, unpacked (:func:`~legionrm.models.intake.unpack_replies`)."""
    return unpack_replies(await sent)


__all__ = ["BatchMismatch", "Collector", "Intake"]
