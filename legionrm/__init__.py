"""legionrm: a Legion-style negotiated resource manager on Ray.

The public names are loaded when first used, so ``import legionrm.client``
(and the CLI talking to the gateway) pays for nothing it does not use.
"""

from __future__ import annotations

from importlib import import_module

from legionrm.version import __version__

TYPE_CHECKING = False  # typing's, without importing typing: a CLI call never loads it
if TYPE_CHECKING:
    from typing import Any

_WHERE = {
    "Client": "legionrm.client.client",
    "Identity": "legionrm.models",
    "LegionError": "legionrm.errors",
    "MILError": "legionrm.errors",
    "MILSyntaxError": "legionrm.errors",
    "MILTypeError": "legionrm.errors",
    "QueryResult": "legionrm.models",
    "Refusal": "legionrm.models",
    "ResourceRecord": "legionrm.models",
}

__all__ = ["Client", "Identity", "LegionError", "MILError", "MILSyntaxError", "MILTypeError", "QueryResult", "Refusal",
           "ResourceRecord", "__version__"]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(import_module(_WHERE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'legionrm' has no attribute {name!r}")
