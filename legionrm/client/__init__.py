"""The user's side of the front door: credentials, signed calls, :class:`Client`.

``from legionrm import Client``; ``Client.from_credentials()`` finds the
user's credentials file (:mod:`legionrm.client.credentials`) and talks to the
gateway over HTTP(S), each call signed (:mod:`legionrm.client.signing`).
Results are the gateway's pydantic models (:mod:`legionrm.models.api`);
errors are :mod:`legionrm.client.errors`.  Importing this package imports
neither Ray nor numpy (a test checks).
"""

from __future__ import annotations

from importlib import import_module

TYPE_CHECKING = False  # typing's, without importing typing: a CLI call never loads it
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Client", "Credentials"]


def __getattr__(name: str) -> Any:  # lazy: `import legionrm.client` stays cheap
    where = {"Client": "legionrm.client.client", "Credentials": "legionrm.client.credentials"}
    if name in where:
        return getattr(import_module(where[name]), name)
    raise AttributeError(f"module 'legionrm.client' has no attribute {name!r}")
