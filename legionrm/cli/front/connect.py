"""How a user verb reaches the gateway: the lean :class:`~legionrm.client.wire.Wire` most
verbs print from, or the typed :class:`~legionrm.client.client.Client` (pydantic, imported only
when a verb asks for it), both with the user's credentials and ``--as``."""

from __future__ import annotations

import argparse

from legionrm.client.wire import Wire

TYPE_CHECKING = False  # typing's, without importing typing: a CLI call never loads it
if TYPE_CHECKING:
    from typing import Any


def client(args: argparse.Namespace) -> Wire:
    return Wire.from_credentials(getattr(args, "credentials", None), as_user=getattr(args, "as_user", None))


def typed(args: argparse.Namespace) -> Any:
    """The typed Python :class:`~legionrm.client.client.Client` (pydantic results), for the verbs
    whose answers are printed from their models; the everyday verbs use the lean :func:`client`."""
    from legionrm.client.client import Client

    return Client.from_credentials(getattr(args, "credentials", None), as_user=getattr(args, "as_user", None))
