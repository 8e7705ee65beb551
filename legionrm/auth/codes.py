"""Every refusal code the auth core can return, in one place.

Codes are dotted strings in the ``auth.`` family, so a caller can match the
family (``code.startswith("auth.")``) or one exact reason.  They are part of
the wire contract (explanations and the command line key on them), so they are
never renamed.

The order in which a call proof is checked is fixed and documented in
:mod:`legionrm.auth.proof`: malformed -> unknown user -> bad signature ->
wrong audience -> wrong call -> clock skew / expired -> replayed.
"""

from __future__ import annotations

# --- proving who calls ---------------------------------------------------------------
MALFORMED = "auth.malformed"  # not a proof at all: missing/ill-typed fields, bad encoding, too long a life
UNKNOWN_USER = "auth.unknown_user"  # the principal named is not in the registry
BAD_SIGNATURE = "auth.bad_signature"  # the signature does not match the fields (forged or altered)
WRONG_AUDIENCE = "auth.wrong_audience"  # well signed, but made out to another actor (replayed elsewhere)
WRONG_CALL = "auth.wrong_call"  # well signed, but for another call, other arguments or another request
CLOCK_SKEW = "auth.clock_skew"  # issued further in the future than the allowed clock skew
EXPIRED = "auth.expired"  # past its expiry (plus the allowed skew)
REPLAYED = "auth.replayed"  # its nonce was already seen while it is still live
OVERLOADED = "auth.overloaded"  # the replay cache is full: refused rather than forget a live nonce

# --- attestations (the Scheduler vouching for a user to a host) ------------------------
UNKNOWN_ISSUER = "auth.unknown_issuer"  # signed by no scheduler this host trusts
WRONG_HOST = "auth.wrong_host"  # an attestation made out to another host
WRONG_RESERVATION = "auth.wrong_reservation"  # an attestation for another reservation (request id or amount)
ATTESTATION_SPENT = "auth.attestation_spent"  # an attestation already spent on a reservation that holds or was used
NO_PROOF = "auth.no_proof"  # no proof at all (a call without one, a reservation without an attestation)

# --- who may do what --------------------------------------------------------------------
FORBIDDEN = "auth.forbidden"  # the caller's roles do not allow this action
NOT_OWNER = "auth.not_owner"  # acting on a request/instance/reservation/host that is someone else's
WRONG_RESOURCE = "auth.wrong_resource"  # a resource record written by anyone but that resource
NO_OS_USER = "auth.no_os_user"  # the user has no OS account their work may run as (legionrm.hostobj.owner)

PROOF_CODES = (MALFORMED, UNKNOWN_USER, BAD_SIGNATURE, WRONG_AUDIENCE, WRONG_CALL, CLOCK_SKEW, EXPIRED, REPLAYED, OVERLOADED)
ATTESTATION_CODES = (MALFORMED, UNKNOWN_ISSUER, BAD_SIGNATURE, WRONG_HOST, WRONG_CALL, CLOCK_SKEW, EXPIRED,
                     WRONG_RESERVATION, ATTESTATION_SPENT)
ROLE_CODES = (FORBIDDEN, NOT_OWNER, WRONG_RESOURCE)
ALL_CODES = tuple(dict.fromkeys(PROOF_CODES + ATTESTATION_CODES + ROLE_CODES + (NO_OS_USER,)))
