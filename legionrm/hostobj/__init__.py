"""legionrm.hostobj: host, vault and class objects, their calendars, tokens and owner policies.

Pure cores only (no Ray): the Ray shells live in ``hostobj.actor`` and
``hostobj.ray_node``, imported on demand.
"""

from legionrm.hostobj.build import build_class, build_host, build_vault
from legionrm.hostobj.calendar import BUSY, BUSY_LATER, FREE, Calendar
from legionrm.hostobj.classobj import ClassObject, ClassPolicy
from legionrm.hostobj.group import HostGroup
from legionrm.hostobj.host import HostObject
from legionrm.hostobj.owners.policy import ADMIT, AllOf, AnyOf, Policy, load_policy
from legionrm.hostobj.policies import (
    AllowClasses,
    AllowGroups,
    AllowUsers,
    DenyClasses,
    DenyGroups,
    DenyUsers,
    HoursOfWeek,
    LoadCeiling,
    MaxInstancesPerUser,
)
from legionrm.hostobj.resource import CollectionSink, NullSink, ResourceObject
from legionrm.hostobj.vault import VaultObject

__all__ = [
    "ADMIT", "AllOf", "AllowClasses", "AllowGroups", "AllowUsers", "AnyOf", "BUSY", "BUSY_LATER", "Calendar",
    "ClassObject", "ClassPolicy", "CollectionSink", "DenyClasses", "DenyGroups", "DenyUsers", "FREE", "HostGroup",
    "HostObject", "HoursOfWeek", "LoadCeiling", "MaxInstancesPerUser", "NullSink", "Policy", "ResourceObject",
    "VaultObject", "build_class", "build_host", "build_vault", "load_policy",
]
