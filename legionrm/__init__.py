"""legionrm: a Legion-style negotiated resource manager on Ray."""

from legionrm.errors import LegionError, MILError, MILSyntaxError, MILTypeError
from legionrm.models import Identity, QueryResult, Refusal, ResourceRecord

__all__ = [
    "Identity",
    "LegionError",
    "MILError",
    "MILSyntaxError",
    "MILTypeError",
    "QueryResult",
    "Refusal",
    "ResourceRecord",
]
__version__ = "0.1.0"
