"""Every refusal, failure and error code legionrm gives, defined once.

A code is a short string a program can match on: a :class:`~legionrm.models.Refusal`'s
``code``, a :class:`~legionrm.models.PlacementFailure`'s, an audit finding's, an
``AuthRefusedError``'s, the ``error.code`` of a command run with ``--json``.  Most are
dotted, ``category.reason``, so a caller can match a whole category
(``code.startswith("token.")``) or one exact reason; a few older ones are one word and
name their category explicitly.  Codes are part of the wire contract (scripts, the
Enactor and the Scheduler's explanations key on them): their strings never change.

Each constant is named for its string: ``"request.conflict"`` is ``REQUEST_CONFLICT``;
a one-word code whose category is another word gets that category in front
(``"busy"`` in ``placement`` is ``PLACEMENT_BUSY``).  The constants are plain ``str``,
so a code crosses Ray and JSON as itself.

``docs/errors.md`` is made from this module: ``python -m legionrm.codes --markdown``.
This module imports nothing of legionrm's, so every package can use it.
"""

from __future__ import annotations

import re
import sys
from collections import namedtuple

_CODE = re.compile(r"^[a-z][a-z_]*(\.[a-z_]+)?$")


class Code(namedtuple("Code", ("code", "category", "meaning", "for_hooks"), defaults=(False,))):
    """One registry entry: the ``code`` as a program sees it, its ``category`` and what it means
    (``meaning``), all str; ``for_hooks`` (bool, default False): offered to owner hooks (their
    policies refuse with it), legionrm's own code need not give it.  For a family
    (``resource.<kind>``), ``code`` is the pattern.  (collections' namedtuple: every CLI call
    imports this module, and typing's NamedTuple or a dataclass would load typing or inspect.)"""

    __slots__ = ()


REGISTRY: dict[str, Code] = {}
"""Every code (and family pattern), in the order defined here."""


def code(text: str, meaning: str, category: str | None = None, *, for_hooks: bool = False) -> str:
    """Register ``text`` (the part before the dot is its category unless
    ``category`` says otherwise) and return it unchanged.  Raises ValueError
    for a code defined twice or one that is not ``word`` or ``word.word``."""
    if not _CODE.match(text):
        raise ValueError(f"{text!r} is not a code: lowercase words and underscores, at most one dot")
    if text in REGISTRY:
        raise ValueError(f"code {text!r} is defined twice")
    REGISTRY[text] = Code(text, category or text.split(".", 1)[0], meaning, for_hooks)
    return text


class Family(namedtuple("Family", ("prefix",))):
    """Codes made of a fixed category and a variable name (``resource.ncpus``): the ``prefix`` (str)."""

    __slots__ = ()

    def of(self, name: str) -> str:
        """The family's code for ``name``."""
        return self.prefix + name


def family(prefix: str, placeholder: str, meaning: str) -> Family:
    """Register the codes ``prefix<placeholder>`` (``prefix`` ends with a dot)."""
    pattern = f"{prefix}<{placeholder}>"
    if pattern in REGISTRY or not prefix.endswith(".") or not _CODE.match(prefix + "x"):
        raise ValueError(f"bad or repeated code family {pattern!r}")
    REGISTRY[pattern] = Code(pattern, prefix.rstrip("."), meaning)
    return Family(prefix)


# --- auth: proving who calls --------------------------------------------------------------
AUTH_MALFORMED = code("auth.malformed",
                      "not a proof at all: missing or ill-typed fields, bad encoding, too long a life")
AUTH_UNKNOWN_USER = code("auth.unknown_user", "the principal named is not in the registry")
AUTH_BAD_SIGNATURE = code("auth.bad_signature", "the signature does not match the fields (forged or altered)")
AUTH_WRONG_AUDIENCE = code("auth.wrong_audience", "well signed, but made out to another actor (replayed elsewhere)")
AUTH_WRONG_CALL = code("auth.wrong_call", "well signed, but for another call, other arguments or another request")
AUTH_CLOCK_SKEW = code("auth.clock_skew", "issued further in the future than the allowed clock skew")
AUTH_EXPIRED = code("auth.expired", "past its expiry (plus the allowed skew)")
AUTH_REPLAYED = code("auth.replayed", "its nonce was already seen while it is still live")
AUTH_OVERLOADED = code("auth.overloaded", "the replay cache is full: refused rather than forget a live nonce")
# --- auth: attestations (the Scheduler vouching for a user to a host) ----------------------
AUTH_UNKNOWN_ISSUER = code("auth.unknown_issuer", "an attestation signed by no scheduler this host trusts")
AUTH_WRONG_HOST = code("auth.wrong_host", "an attestation made out to another host")
AUTH_WRONG_RESERVATION = code("auth.wrong_reservation", "an attestation for another reservation (request id or amount)")
AUTH_ATTESTATION_SPENT = code("auth.attestation_spent",
                              "an attestation already spent on a reservation that holds or was used")
AUTH_UNSIGNED = code("auth.unsigned", "an HTTP call to the gateway that carries no RFC 9421 signature")
AUTH_IDENTITY = code("auth.identity", "a request file's [identity] names another user than the one who signed the call")
AUTH_NO_PROOF = code("auth.no_proof", "no proof at all (a call without one, a reservation without an attestation, "
                     "the dashboard without its key)")
# --- auth: who may do what -------------------------------------------------------------------
AUTH_FORBIDDEN = code("auth.forbidden", "the caller's roles do not allow this action")
AUTH_NOT_OWNER = code("auth.not_owner",
                      "acting on a request, instance, reservation, host or trigger that is someone else's")
AUTH_WRONG_RESOURCE = code("auth.wrong_resource", "a resource record written by anyone but that resource")
AUTH_NO_OS_USER = code("auth.no_os_user",
                       "the user maps to no OS account their work may run as here (refused at submit)")

PROOF_CODES = (AUTH_MALFORMED, AUTH_UNKNOWN_USER, AUTH_BAD_SIGNATURE, AUTH_WRONG_AUDIENCE, AUTH_WRONG_CALL,
               AUTH_CLOCK_SKEW, AUTH_EXPIRED, AUTH_REPLAYED, AUTH_OVERLOADED)
"""What a call proof can be refused for, in the order :mod:`legionrm.auth.proof` checks."""
ATTESTATION_CODES = (AUTH_MALFORMED, AUTH_UNKNOWN_ISSUER, AUTH_BAD_SIGNATURE, AUTH_WRONG_HOST, AUTH_WRONG_CALL,
                     AUTH_CLOCK_SKEW, AUTH_EXPIRED, AUTH_WRONG_RESERVATION, AUTH_ATTESTATION_SPENT)
"""What an attestation can be refused for."""
ROLE_CODES = (AUTH_FORBIDDEN, AUTH_NOT_OWNER, AUTH_WRONG_RESOURCE)
"""What a verified caller can be refused for."""

# --- resources: routing and request shape ----------------------------------------------------
RESOURCE_UNKNOWN = code("resource.unknown", "a host or vault no actor or group carries (or that died)")
RESOURCE_MISMATCH = code("resource.mismatch", "the request names another resource than the one asked")
RESOURCE_ERROR = code("resource.error", "the resource raised while handling one item of a batch")
RESOURCE_DEAD = code("resource.dead", "the resource did not answer the Enactor (died, timed out, unknown)")
RESOURCE_UNREACHABLE = code("resource.unreachable", "a call to a resource's actor failed or timed out")
RESOURCE_KIND = family("resource.", "kind", "the host has too little of that resource kind (ncpus, mem, ...) "
                       "for the chunk, as the placement engine explains it")
REQUEST_CONFLICT = code("request.conflict", "a request id reused with a different request")
REQUEST_INVALID = code("request.invalid", "a request no resource could grant (a start that is not a finite time)")
REQUEST_TOO_BIG = code("request.too_big", "asks more than the whole cluster has ever held")
QUEUE_BEHIND = code("queue.behind", "waits for the next pass: starting it now would delay a reserved start, or strict "
                    "first come, first served puts waiting requests before it")
VAULT_INCOMPATIBLE = code("vault.incompatible", "host and vault are not paired")
VAULT_NONE = code("vault.none", "no vault serving the host can hold the object's state for this caller")

# --- resources: the base checks (never bypassed by owner hooks) --------------------------------
CAPACITY_TOTAL = code("capacity.total", "asks more than the resource has at all")
CAPACITY = code("capacity", "not enough free when the work would start (on a host, or across the feasible hosts)")
CALENDAR_BUSY = code("calendar.busy", "fits at the start, but collides with a later reservation")

# --- tokens -----------------------------------------------------------------------------------
TOKEN_FORGED = code("token.forged", "the token's signature does not match (forged or altered)")
TOKEN_WRONG_ISSUER = code("token.wrong_issuer", "a token issued by another resource")
TOKEN_UNKNOWN = code("token.unknown", "well signed, but this resource holds no such reservation")
TOKEN_EXPIRED = code("token.expired", "not used before its timeout, or its reservation ended")
TOKEN_CANCELLED = code("token.cancelled", "its reservation was cancelled")
TOKEN_USED = code("token.used", "a one-shot token that already started an instance")
TOKEN_IN_USE = code("token.in_use", "a reusable token whose instance still runs")
TOKEN_WRONG_HOLDER = code("token.wrong_holder", "presented by someone other than its holder")
TOKEN_WRONG_CLASS = code("token.wrong_class", "reserved for one class, used to start another")
TOKEN_NOT_YET = code("token.not_yet", "an advance reservation presented before its start")
TOKEN_MISSING = code("token.missing", "an advance reservation holds no host token for one of its placements")

# --- instances and objects' persistent state --------------------------------------------------
INSTANCE_UNKNOWN = code("instance.unknown", "the host runs no such instance")
START_FAILED = code("start.failed", "the host could not launch the instance")
STATE_UNKNOWN = code("state.unknown", "the vault holds no state for that object")
STATE_QUOTA = code("state.quota", "the user's stored state would pass the vault's quota")
STATE_SAVE_FAILED = code("state.save_failed", "the instance could not save its state (its hooks raised, or it is gone)")
STATE_RESTORE_FAILED = code("state.restore_failed", "the new instance could not take its state back")
STATE_INVALID = code("state.invalid", "a bad object id or state value")
STATE_DISK_FULL = code("state.disk_full", "a state store could not be written: its filesystem is full (the "
                       "message names the path); nothing changed, retry once space is freed")
STATE_IO_ERROR = code("state.io_error", "a state store could not be written: the disk reported an I/O error "
                      "(the message names the path); nothing changed")

# --- owner policies (owner hooks may use any policy.* code of their own) ---------------------------
POLICY = code("policy", "a generic owner veto (or an owner hook that raised or answered nonsense)")
POLICY_USER = code("policy.user", "the owner does not accept this user")
POLICY_CLASS = code("policy.class", "the owner does not accept this class")
POLICY_GROUP = code("policy.group", "the owner does not accept the user's groups")
POLICY_HOURS = code("policy.hours", "outside the hours the owner opens the host")
POLICY_LOAD = code("policy.load", "the host's load is over the owner's ceiling")
POLICY_INSTANCES = code("policy.instances", "the user runs as many instances here as the owner allows")
POLICY_HOST = code("policy.host", "a vault vetoing the host it would serve", for_hooks=True)

# --- class objects ------------------------------------------------------------------------------
CLASS_HOST_LIST = code("class.host_list", "the host is not on the class's host list")
CLASS_MAX_INSTANCES = code("class.max_instances", "the class runs as many instances as it allows")
CLASS_VETO = code("class.veto", "the class's own policy refused", for_hooks=True)
CLASS_NO_IMPLEMENTATION = code("class.no_implementation", "none of the class's implementations fits the host")
CLASS_UNKNOWN = code("class.unknown", "the request names a class the planner does not know")

# --- the planner and the placement engines ---------------------------------------------------------
QUERY_NO_MATCH = code("query.no_match", "the host does not satisfy the request's constraint")
ACCESS_DENIED = code("access.denied", "the host does not accept the user with this class")
REPLAN_AVOIDED = code("replan.avoided", "a host the request avoids (the one a moving object leaves)")
PLACEMENT_NO_HOSTS = code("no_hosts", "the planner had no available hosts at all", "placement")
HOST_UNREPORTED = code("host.unreported", "every reporting host refuses the work for what it is, but a host that "
                       "may take it is not reporting now (stale, varied off, or not joined since a restart): "
                       "the work waits for it")
PLACEMENT_UNKNOWN = code("unknown", "the placement engine does not know that host", "placement")
PLACEMENT_QUEUE = code("queue", "the host belongs to another queue", "placement")
PLACEMENT_BUSY = code("busy", "the host runs exclusive work, or the request is exclusive and the host busy",
                      "placement")
PLACEMENT_CALENDAR = code("calendar", "a reservation on the host starts before the work would end", "placement")
PLACEMENT_NOT_NEEDED = code("not_needed", "the request was placed on other hosts", "placement")
PLACEMENT_NOT_ENOUGH = code("not_enough", "the hosts together cannot hold the request", "placement")

# --- admission: resource pools and DUCC classes --------------------------------------------------
RESPOOL_UNKNOWN = code("respool.unknown", "no resource pool at that path")
RESPOOL_NOT_LEAF = code("respool.not_leaf", "work is admitted only to a leaf pool")
RESPOOL_LIMIT = code("respool.limit", "the request needs more than the pool's limit: it can never be admitted there")
RESPOOL_DUPLICATE = code("respool.duplicate", "the request is already queued or admitted in a pool")
RESPOOL_ENTITLEMENT = code("respool.entitlement", "the gang would pass the pool's non-slack entitlement")
RESPOOL_SLACK_ENTITLEMENT = code("respool.slack_entitlement", "a revocable gang would pass the slack entitlement")
RESPOOL_CONTROLLER_LIMIT = code("respool.controller_limit", "a controller gang would pass the controller limit")
RESPOOL_RESERVATION = code("respool.reservation", "a non-preemptible gang would pass the pool's reservation")
RESPOOL_INVALID = code("respool.invalid", "the gang held killed tasks: they were dropped and the rest queued again")
DUCC_CLASS_UNKNOWN = code("ducc.class_unknown", "no DUCC class of that name")
DUCC_USER = code("ducc.user", "the user may not use that DUCC class")
DUCC_ALLOTMENT = code("ducc.allotment", "the user's shares would pass the DUCC allotment")
REQUEST_PRIORITY = code("request.priority", "a request that is not an administrator's sets priority or weight: "
                        "the site sets them (QoS, fair share)")
QOS_UNKNOWN = code("qos.unknown", "no QoS of that name in the cluster file")
QOS_DENIED = code("qos.denied", "the user may not choose that QoS (its users and groups)")
QOS_MAX_WALLTIME_S = code("qos.max_walltime_s", "a walltime over its QoS's max_walltime_s: it waits (pending)")
QOS_MAX_RUNNING_CPUS_PER_USER = code("qos.max_running_cpus_per_user",
                                     "its user's running cpus in the QoS would pass the limit: it waits (pending)")
QOS_MAX_PENDING_PER_USER = code("qos.max_pending_per_user",
                                "more of its user's requests wait in the QoS than the limit: it waits unconsidered")
REQUEST_AFTER = code("request.after", "an object's after names an object the request does not have, or the "
                     "objects follow each other in a cycle: refused at submit")
QUEUE_PREEMPTED = code("queue.preempted", "the request ran in a preemptable QoS and was preempted for higher-priority or "
                       "non-preemptable work (requeued or ended, by its on_preempt)")
QUEUE_HELD = code("queue.held", "the request is held: it waits until released")
QUEUE_NOT_PENDING = code("queue.not_pending", "hold, release, update and top act on pending requests only")
DEPEND_WAITING = code("depend.waiting", "it waits for the requests it names (after_ok, after_any, after_not_ok) "
                      "to end: pending")
DEPEND_NEVER = code("depend.never", "a dependency that can never be met (the request it names ended the wrong way, "
                    "or is unknown): the request is cancelled")
DEPEND_BEGIN_AT = code("depend.begin_at", "it does not start before its begin_at time: pending until then")
ARRAY_LIMIT = code("array.limit", "its array has as many tasks running as its %limit allows: pending")
NODE_LOST = code("node.lost", "its host was lost: it ended node_lost, or (requeue = true) went back to the queue")

# --- the Scheduler, the Enactor and reservations ahead ----------------------------------------------
ACTIVATE_UNKNOWN = code("activate.unknown", "no object of that name runs or rests inert")
APPROVAL_DECLINED = code("approval.declined", "the Scheduler declined the Enactor's schedule")
APPROVAL_KEYS = code("approval.keys", "the schedule does not place exactly the request's instances")
APPROVAL_TIMEOUT = code("approval.timeout", "the Scheduler did not confirm the schedule in time")
APPROVAL_UNKNOWN_REQUEST = code("approval.unknown_request", "the Scheduler is not scheduling that request "
                                "(a stale or foreign enactment)")
DELTA_UNKNOWN_KEY = code("delta.unknown_key", "a delta schedule replaces keys its master does not have")
ENACTMENT_ERROR = code("enactment.error", "the Enactor failed while starting an elastic job's process")
ENACTOR_LOST = code("enactor.lost", "the Enactor died or never answered during an enactment")
AHEAD_EXPIRED = code("ahead.expired", "a reserved request was not started by its start plus the slack")
AHEAD_START_FAILED = code("ahead.start_failed", "a reserved request came to start with no reservation held for it")

# --- moving objects ---------------------------------------------------------------------------------
OBJECT_UNKNOWN = code("object.unknown", "no object of that id")
OBJECT_NOT_RUNNING = code("object.not_running", "the object is not running (or did not start)")
OBJECT_NOT_INERT = code("object.not_inert", "the object has no state in a vault")
OBJECT_NO_PLACE = code("object.no_place", "no place for a new copy of the object")
OBJECT_BUSY = code("object.busy", "the object is being moved already")
OBJECT_UNSUPPORTED = code("object.unsupported", "this scheduler does not move objects")

# --- the auditor's findings ------------------------------------------------------------------------
HOST_OVER_CAPACITY = code("host.over_capacity", "audit: a host uses more than its capacity")
INSTANCE_ORPHAN = code("instance.orphan", "audit: an instance runs for no running request")
INSTANCE_GHOST = code("instance.ghost", "audit: counted as running on a host that does not run it")
RESERVATION_UNHELD = code("reservation.unheld", "audit: a reservation held or open with nobody using it")
CLASS_COUNT = code("class.count", "audit: a class counts other instances than the Scheduler runs")
POOL_ALLOCATION = code("pool.allocation", "audit: pool allocations differ from the admitted requests")
ALLOTMENT_HELD = code("allotment.held", "audit: a DUCC allotment held by a request that is not admitted")
REQUEST_RUNNING_ENDED = code("request.running_ended", "audit: a request still running whose instances have all ended")
REQUEST_UNPLACED = code("request.unplaced", "audit: a request admitted or placing that no attempt is placing")
BOOK_DURABLE = code("book.durable", "audit: the durable request book differs from the Scheduler's live one")

# --- the gateway (the HTTP front door) and its client ------------------------------------------------
REQUEST_TOO_LARGE = code("request.too_large", "a body over the gateway's size limit (HTTP 413)")
REQUEST_UNKNOWN = code("request.unknown", "no request of that id")
REQUEST_NO_INSTANCE = code("request.no_instance",
                           "the request has no instance of that number or id (logs: give --instance 0 to N-1)")
REQUEST_NO_OUTPUT = code("request.no_output", "the instance runs no command, or its host's output cannot be reached")
RATE_LIMITED = code("rate.limited", "the user is over their rate of calls to the gateway (HTTP 429)")
USER_SELF = code("user.self", "an administrator cannot remove themselves")
USER_UNKNOWN = code("user.unknown", "no user of that name in the registry")
USER_EXISTS = code("user.exists", "a user of that name is already registered (user add)")
SYSTEM_UNAVAILABLE = code("system.unavailable",
                          "the control plane behind the gateway did not answer (an actor is dead, or it timed out)")
CLIENT_UNREACHABLE = code("client.unreachable", "the client could not reach the gateway")
CLIENT_ANSWER = code("client.answer", "the gateway's answer is not what the API describes")
CLIENT_FINGERPRINT = code("client.fingerprint", "the gateway's TLS certificate is not the one the credentials pin")
HTTP_STATUS = family("http.", "status", "an HTTP error status with no code of legionrm's (a path the gateway "
                     "does not serve: http.not_found, or the status number)")
WAIT_TIMEOUT = code("wait.timeout", "a request did not end within the time a wait allowed")
CREDENTIALS = code("credentials", "no usable credentials file (missing, unreadable, readable by others, malformed)")

# --- several schedulers, drained hosts, live reconfiguration (issue 27) ------------------------------
HOST_DRAINED = code("host.drained", "the host is drained by an administrator: it finishes its work and takes no new work")
REQUEST_NO_SCHEDULER = code("request.no_scheduler", "the request (or its class) names no scheduler this system runs")
RELOAD_REFUSED = code("reload.refused", "a live change the validators refused: nothing was changed")
RELOAD_ROLLED_BACK = code("reload.rolled_back", "a live change failed part way (an actor refused or failed): "
                          "what it had applied was set back, so nothing was changed")
RELOAD_PARTIAL = code("reload.partial", "a live change failed part way and setting back what it had applied "
                      "failed too: the reason names what is left changed")

# --- the command line (--json's error.code; else the legionrm error class's name) -------------------
CLI_TIMEOUT = code("timeout", "the running system did not answer in time", "cli")
CLI_ACTOR_DIED = code("actor_died", "a legionrm actor died (or is unreachable)", "cli")
CLI_ACTOR_UNAVAILABLE = code("actor_unavailable", "a legionrm actor is unreachable", "cli")
CLI_RAY_SYSTEM = code("ray_system", "Ray itself failed", "cli")
CLI_RAY = code("ray", "Ray failed", "cli")
CLI_INTERNAL = code("internal", "an actor raised something that is not a legionrm error (a bug)", "cli")
CLI_NOT_RUNNING = code("not_running", "no system could be reached", "cli")
CLI_USAGE = code("usage", "the command was given too little to act on", "cli")


# --- docs/errors.md ------------------------------------------------------------------------------


def markdown() -> str:
    """``docs/errors.md``: every code by category, with its meaning."""
    out = [
        "# Codes",
        "",
        "Every refusal, failure and error code legionrm gives. Generated from",
        "`legionrm/codes.py` by `python -m legionrm.codes --markdown`; do not edit by hand.",
        "",
        "A code is `category.reason` (or one word, with its category given below).",
        "Match a whole category with `code.startswith(\"token.\")`, or one exact code.",
        "Owner hooks may add `policy.*` codes of their own. Under `--json`, a failed",
        "command's `error.code` is a code below or the name of the legionrm error class",
        "(`ConfigError`, ...).",
    ]
    cats: dict[str, list[Code]] = {}
    for entry in REGISTRY.values():
        cats.setdefault(entry.category, []).append(entry)
    for cat in sorted(cats):
        out += ["", f"## {cat}", "", "| code | meaning |", "|---|---|"]
        out += [f"| `{e.code}` | {'for owner hooks: ' if e.for_hooks else ''}{e.meaning} |"
                for e in sorted(cats[cat], key=lambda e: e.code)]
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    if argv != ["--markdown"]:
        print("usage: python -m legionrm.codes --markdown", file=sys.stderr)
        return 2
    sys.stdout.write(markdown())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
