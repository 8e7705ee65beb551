"""Every refusal code a host, vault or class object can return, in one place.

Codes are dotted strings so a caller can match a family (``code.startswith("token.")``)
or one exact reason.  They are part of the wire contract: the Enactor and the
Scheduler's explanations key on them, so they are never renamed.
"""

from __future__ import annotations

# --- routing and request shape ------------------------------------------------
RESOURCE_UNKNOWN = "resource.unknown"  # a host a group does not carry (or that died)
RESOURCE_MISMATCH = "resource.mismatch"  # request.resource names another resource
RESOURCE_ERROR = "resource.error"  # the resource raised while handling one batch item
REQUEST_CONFLICT = "request.conflict"  # a request_id reused with a different request
REQUEST_INVALID = "request.invalid"  # a request no resource could grant (a start that is not a finite time)
VAULT_INCOMPATIBLE = "vault.incompatible"  # host and vault are not paired

# --- the base checks (never bypassed by owner hooks) -----------------------------
CAPACITY_TOTAL = "capacity.total"  # asks more than the resource has at all
CAPACITY = "capacity"  # not enough free at the start time
CALENDAR_BUSY = "calendar.busy"  # fits at the start but collides with a later reservation

# --- tokens -------------------------------------------------------------------------
TOKEN_FORGED = "token.forged"  # signature does not match (forged or altered)
TOKEN_WRONG_ISSUER = "token.wrong_issuer"  # issued by another resource
TOKEN_UNKNOWN = "token.unknown"  # well signed, but this resource holds no such reservation
TOKEN_EXPIRED = "token.expired"  # not used before its timeout, or its reservation ended
TOKEN_CANCELLED = "token.cancelled"
TOKEN_USED = "token.used"  # a one-shot token already started an instance
TOKEN_IN_USE = "token.in_use"  # a reusable token whose instance still runs
TOKEN_WRONG_HOLDER = "token.wrong_holder"  # presented by someone other than its holder
TOKEN_WRONG_CLASS = "token.wrong_class"  # reserved for one class, used to start another
TOKEN_NOT_YET = "token.not_yet"  # an advance reservation presented before its start

# --- instances ------------------------------------------------------------------------
INSTANCE_UNKNOWN = "instance.unknown"
START_FAILED = "start.failed"  # the host could not launch the instance

# --- objects' persistent state (vaults keep it; hosts save and restore it) -----------------
STATE_UNKNOWN = "state.unknown"  # the vault holds no state for that object
STATE_QUOTA = "state.quota"  # the user's stored state would pass the vault's quota
STATE_SAVE = "state.save_failed"  # the instance could not save its state (its hooks raised, or it is gone)
STATE_RESTORE = "state.restore_failed"  # the new instance could not take the state back
STATE_INVALID = "state.invalid"  # a bad object id or state value

# --- owner policies (ready-made ones; owner hooks may use any "policy.*" code) ------
POLICY = "policy"  # a generic owner veto
POLICY_USER = "policy.user"
POLICY_CLASS = "policy.class"
POLICY_GROUP = "policy.group"
POLICY_HOURS = "policy.hours"
POLICY_LOAD = "policy.load"
POLICY_INSTANCES = "policy.instances"
POLICY_HOST = "policy.host"  # a vault vetoing the host it would serve

# --- class objects ------------------------------------------------------------------------
CLASS_HOST_LIST = "class.host_list"  # host not on the class's class_host_list
CLASS_MAX_INSTANCES = "class.max_instances"
CLASS_VETO = "class.veto"
CLASS_NO_IMPLEMENTATION = "class.no_implementation"  # none of the class's implementations fits the host

TOKEN_CODES = (
    TOKEN_FORGED,
    TOKEN_WRONG_ISSUER,
    TOKEN_UNKNOWN,
    TOKEN_EXPIRED,
    TOKEN_CANCELLED,
    TOKEN_USED,
    TOKEN_IN_USE,
    TOKEN_WRONG_HOLDER,
    TOKEN_WRONG_CLASS,
    TOKEN_NOT_YET,
)
