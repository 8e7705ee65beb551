"""What the gateway asks of the control plane: one signed call, as a user.

The routes never touch Ray.  They call :meth:`ControlPlane.call` with the
actor (``scheduler``, ``collection``, ``pools``), the method and its
arguments by name; the plane signs the call with the gateway agent's key
acting for the proven user (:attr:`~legionrm.auth.proof.CallProof.acting_for`),
so every door of the control plane judges it as that user's own call.
:mod:`legionrm.gateway.control` does it over Ray, :mod:`legionrm.gateway.local`
in process.  A refusal or error comes back raised as the control plane
raised it (a :class:`~legionrm.errors.LegionError`: ``AuthRefusedError``,
``SchedulingError``...), never as a Ray exception.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Protocol

from legionrm import codes
from legionrm.errors import LegionError

TARGETS = ("scheduler", "collection", "pools")


class Unavailable(LegionError):
    """The control plane did not answer (an actor is dead, or it timed out)."""

    code = codes.SYSTEM_UNAVAILABLE


class ControlPlane(Protocol):
    async def call(self, user: str, target: str, method: str, args: dict[str, Any]) -> Any:
        """``method(**args)`` on ``target`` as ``user``; raises what the control plane raised."""
        ...

    def start(self, user: str, target: str, method: str, args: dict[str, Any]) -> Awaitable[Any]:
        """:meth:`call` begun now: the call is signed and on its way when this returns (raising nothing
        itself); awaited, its answer, or what the control plane raised.  The intake sends a batch with it
        the moment the batch goes, not once the event loop has read the calls that came meanwhile."""
        ...

    async def close(self) -> None:
        ...
