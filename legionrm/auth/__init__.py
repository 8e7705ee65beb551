"""Users, credentials, signed calls and roles: who may do what (pure core, no Ray).

A map of the package:

- :mod:`~legionrm.auth.errors`: errors to fix (key file modes, bad names);
- :mod:`~legionrm.auth.keys`: Ed25519 keys, 0600 key files, :class:`Credential`;
- :mod:`~legionrm.auth.principals`: users and agents, roles, naming rules;
- :mod:`~legionrm.auth.registry`: the persisted :class:`Registry` (groups come only from it);
- :mod:`~legionrm.auth.canonical`: the one canonical signed form, payload digests;
- :mod:`~legionrm.auth.proof`: signed single-use call proofs and their :class:`Verifier`;
- :mod:`~legionrm.auth.attest`: the Scheduler vouching for a user to a host;
- :mod:`~legionrm.auth.roles`: who may act on what.

The flow: an administrator adds a user (``Registry.add_user`` writes the
user's key file); the user signs each call (:func:`sign_call`); the Scheduler
and the Collection verify it (:class:`Verifier`) and get a
:class:`VerifiedCaller` carrying the registry's groups and roles; the
Scheduler attests the user to each host (:func:`attest`), which checks it with
the Scheduler's public key alone (:class:`AttestationVerifier`).
"""

from __future__ import annotations

from legionrm.auth.attest import Attestation, AttestationVerifier, attest
from legionrm.auth.canonical import canonical, payload_digest
from legionrm.auth.errors import (
    AuthError,
    InvalidNameError,
    KeyFileError,
    KeyPermissionError,
    RegistryError,
    UnknownPrincipalError,
)
from legionrm.auth.keys import (
    Credential,
    generate_private_key,
    load_private_key,
    save_private_key,
)
from legionrm.auth.principals import Principal, agent_principal
from legionrm.auth.proof import (
    CallProof,
    CallSigner,
    NonceCache,
    VerifiedCaller,
    Verifier,
    sign_call,
    signed,
)
from legionrm.auth.registry import Registry
from legionrm.auth.roles import (
    Allowed,
    may_act_on,
    may_change_policy,
    may_write_record,
    require_admin,
)

__all__ = [
    "Allowed",
    "Attestation",
    "AttestationVerifier",
    "AuthError",
    "CallProof",
    "CallSigner",
    "signed",
    "Credential",
    "InvalidNameError",
    "KeyFileError",
    "KeyPermissionError",
    "NonceCache",
    "Principal",
    "Registry",
    "RegistryError",
    "UnknownPrincipalError",
    "VerifiedCaller",
    "Verifier",
    "agent_principal",
    "attest",
    "canonical",
    "generate_private_key",
    "load_private_key",
    "may_act_on",
    "may_change_policy",
    "may_write_record",
    "payload_digest",
    "require_admin",
    "save_private_key",
    "sign_call",
]
