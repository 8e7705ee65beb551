"""Every public method of every Ray actor class of legionrm, with the role
it requires on a system that checks who calls (issue 15).  The table is the
contract the tests hold the actors to: ``test_actor_methods`` checks it
covers every method (a new method without a row fails) and that every
guarded one takes a proof; ``tests/ray/test_auth_ray.py`` calls each guarded
one on a live system, unsigned and as a stranger, and expects the role's
refusal code (or, for a view, an answer without anyone else's work or any
host the stranger's access forbids).
"""

from __future__ import annotations

OPEN = "open"  # nothing to protect: liveness, whether auth is on, handles anyone can look up by name
ATTESTED = "attested"  # a reservation: only with the Scheduler's attestation of its holder (auth.no_proof without)
VIEW = "view"  # any verified caller; a user sees only their own work and the hosts their access allows
ANY = "any"  # any verified caller; answers hold no one's work (counters, pool totals)
USER = "user"  # a user's own request, made in the verified caller's name
OWN = "own"  # acts on one request / instance / reservation / job: only its holder (auth.not_owner)
ENACTOR = "enactor"  # only with the Scheduler's approval: the Enactor agent (or a class object's agent)
SYSTEM = "system"  # housekeeping: the Scheduler or Enactor agent (an admin where the method says so)
ADMIN = "admin"  # an administrator (or, where it says so, the system's agents)
RESOURCE = "resource"  # a resource's own Collection record: only that resource's agent
GATEWAY = "gateway"  # many users' calls the gateway verified, sent as one: only the gateway agent

ROLES = (OPEN, ATTESTED, VIEW, ANY, USER, OWN, ENACTOR, SYSTEM, ADMIN, RESOURCE, GATEWAY)

EXPECTED_CODE = {ATTESTED: "auth.no_proof", OWN: "auth.not_owner", ENACTOR: "auth.forbidden",
                 SYSTEM: "auth.forbidden", ADMIN: "auth.forbidden", RESOURCE: "auth.wrong_resource",
                 GATEWAY: "auth.forbidden"}
"""What a stranger (a plain user, with a good proof of their own) gets from a method of each role."""

_RESOURCE_COMMON = {
    "ping": OPEN, "make_reservations": ATTESTED, "cancel_reservations": OWN, "cancel_requests": SYSTEM,
    "audit_views": SYSTEM, "heartbeat": SYSTEM, "expire": SYSTEM, "shutdown": ADMIN,
    "reconfigure": SYSTEM,  # an owner's policy and access list (legionrm reload): the Scheduler or an admin
}
_HOSTS_COMMON = {"drain": SYSTEM}  # drain or resume a host: the Scheduler (for an administrator) or an admin

METHODS: dict[str, dict[str, str]] = {
    "HostActor": {**_RESOURCE_COMMON, **_HOSTS_COMMON, "make_reservation": ATTESTED, "check_reservation": OWN,
                  "cancel_reservation": OWN, "start_object": ENACTOR, "start_objects": ENACTOR, "stop_object": OWN,
                  "stop_objects": OWN, "list_instances": VIEW, "reservations": VIEW, "record": VIEW, "state": VIEW,
                  "save_object": SYSTEM, "restore_object": SYSTEM, "work_results": SYSTEM, "work_output": SYSTEM},
    "HostGroupActor": {**_RESOURCE_COMMON, **_HOSTS_COMMON, "check_reservations": OWN, "start_objects": ENACTOR, "stop_objects": OWN,
                       "list_instances": VIEW, "names": VIEW, "records": VIEW,
                       "save_object": SYSTEM, "restore_object": SYSTEM},
    "VaultActor": {**_RESOURCE_COMMON, "make_reservation": ATTESTED, "check_reservation": OWN,
                   "cancel_reservation": OWN, "use": ENACTOR, "release": ENACTOR, "record": VIEW, "list_uses": SYSTEM,
                   "put_state": SYSTEM, "get_state": SYSTEM, "delete_state": SYSTEM, "stored": SYSTEM},
    "ClassActor": {"ping": OPEN, "add_resources": ADMIN, "create_instance": ENACTOR, "create_instances": ENACTOR,
                   "destroy_instance": OWN,
                   "instance_stopped": SYSTEM, "adopt": SYSTEM, "list_instances": VIEW},
    "SchedulerActor": {
        "ping": OPEN, "authenticated": OPEN, "getCollection": OPEN, "getEnactor": OPEN,
        "scheduleObjects": USER, "submit_elastic": USER,
        "list_requests": VIEW, "list_page": VIEW, "instances": VIEW, "status": VIEW, "cycle_reports": VIEW, "make_schedules": VIEW,
        "explain": VIEW, "getCandidatePlacements": VIEW, "history": VIEW, "logs": OWN,
        "request_info": OWN, "cancel": OWN, "deactivate": OWN, "activate": OWN, "migrate": OWN,
        "object_status": OWN, "status_changes": VIEW, "register_trigger": OWN, "remove_trigger": OWN, "events_since": OWN, "complete_elastic": OWN, "update_elastic": OWN,
        "approve": ENACTOR, "approve_growth": ENACTOR,
        "audit": ADMIN, "tick": ADMIN, "run_cycle": ADMIN, "stop_cycle": ADMIN, "setCollection": ADMIN,
        "setEnactor": ADMIN, "hold": OWN, "release": OWN, "update": ADMIN, "top": ADMIN, "share": VIEW, "prio": VIEW,
        "drain": ADMIN, "serve": ADMIN, "reconfigure_site": ADMIN, "reconfigure_owners": ADMIN, "bound_nodes": ADMIN, "intake_batch": GATEWAY,
    },
    "PoolActor": {"ping": OPEN, "admit": SYSTEM, "release": SYSTEM, "held": SYSTEM, "set_capacity": SYSTEM,
                  "report": ANY, "capacity": ANY, "specs": ANY, "reconfigure": ADMIN},
    "CollectionActor": {"ping": OPEN, "authenticated": OPEN, "join": RESOURCE, "update": RESOURCE,
                        "update_many": RESOURCE, "leave": RESOURCE, "vary_off": ADMIN, "vary_on": ADMIN,
                        "add_subcollection": ADMIN, "shutdown": ADMIN, "query": VIEW, "record": VIEW,
                        "retrieve_all_attributes": VIEW, "snapshot": VIEW, "names": VIEW, "refused_writes": ADMIN},
    "EnactorActor": {"ping": OPEN, "enact_schedule": ENACTOR, "start_reserved": ENACTOR, "add_group": ADMIN, "add_resource": ADMIN,
                     "add_class": ADMIN, "stats": ANY},
}
"""Actor class name -> public method -> role."""
