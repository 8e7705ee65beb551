"""legionrm: a Legion-style negotiated resource manager on Ray."""

from legionrm.errors import LegionError, MILError, MILSyntaxError, MILTypeError
from legionrm.models import Identity, QueryResult, Refusal, ResourceRecord
from legionrm.version import __version__

__all__ = [
    "Identity",
    "LegionError",
    "MILError",
    "MILSyntaxError",
    "MILTypeError",
    "QueryResult",
    "Refusal",
    "ResourceRecord",
    "__version__",
]
