"""The one check at the top of every user-facing call, and where keys live.

Design (issue 15, "who asks is proven, not claimed"):

- **Where.** The registry lives under the system's home (``LEGIONRM_HOME``,
  default ``~/.legionrm``) in ``auth/``: ``auth/registry.json`` (public facts),
  ``auth/users/<name>.key`` (each user's own key, mode 0600) and
  ``auth/agents/<name>.key`` (the Scheduler's and the Enactor's keys, 0600,
  made by ``up``).  :func:`ensure_home` creates what is missing: the registry,
  an ``admin`` user for the operator running ``up``, the ``scheduler`` and
  ``enactor`` agent keys.  Each resource object (host, vault) gets its own
  agent key when its actor starts (:meth:`Registry.add_agent`; the private
  key never leaves that actor's memory).
- **Who signs.** The driver (``system.connect()``, the CLI) loads the
  caller's credential (:func:`load_user`) and signs each call with a
  :class:`~legionrm.auth.proof.CallSigner` over ``(call name, arguments)``,
  made out to the one actor it calls (``to=``: the name that actor's guard
  is ``by``), so a captured proof is worthless at any other actor.
- **Who checks.** The actors hold a :class:`Guard` (pure) and call
  :meth:`Guard.check` first thing in each user-facing method; the rules of
  who may do what stay in :mod:`legionrm.auth.roles`.  A core or shell given
  ``guard=None`` does no authentication (in-process systems and unit tests);
  the Ray system booted with a home always passes one.
- **Hosts.** The Scheduler vouches for the verified user to each host with an
  :class:`~legionrm.auth.attest.Attestation`; hosts check it with the
  Scheduler's public key alone (:func:`host_attestations`).

Nothing here imports Ray.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from legionrm import codes
from legionrm.auth.attest import AttestationVerifier
from legionrm.auth.errors import AuthRefusedError, KeyFileError, UnknownPrincipalError
from legionrm.auth.keys import (
    Credential,
    generate_private_key,
    load_private_key,
    save_private_key,
)
from legionrm.auth.principals import Principal, agent_principal
from legionrm.auth.proof import CallProof, CallSigner, VerifiedCaller, Verifier
from legionrm.auth.registry import Registry
from legionrm.homefs import login_name, private_dir
from legionrm.models import Refusal

AUTH_DIR = "auth"
AGENTS_DIR = "agents"
SCHEDULER = agent_principal("scheduler", "scheduler")
ENACTOR = agent_principal("enactor", "enactor")
DASHBOARD = agent_principal("dashboard", "dashboard")
GATEWAY = agent_principal("gateway", "gateway")
"""The front door (:mod:`legionrm.gateway`): it verifies each user's signed HTTP call and acts for them."""


def auth_home(home: str | os.PathLike[str]) -> Path:
    """The registry directory of a legionrm home."""
    return Path(home) / AUTH_DIR


class ReloadingRegistry:
    """A :class:`Registry` read again whenever its file changed since it was
    last read (one ``stat`` per lookup), so a verifier never holds a stale
    key: users added or removed, agents started after this process began,
    and agents whose keys were issued anew (a second boot on the same home,
    a restarted host group) are all seen at their next call.  Renaming a
    new file into place changes the inode, so even a rewrite of the same
    size within one clock tick is noticed.
    A :class:`~legionrm.auth.proof.PrincipalSource`."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._path = str(registry.path) if registry.path is not None else None  # made once: looked at per call
        self._lock = threading.Lock()
        with self._lock:
            self._stamp = self._now_stamp()
            registry.reload()  # what this stamp describes (the file may have changed since the registry read it)

    def _now_stamp(self) -> tuple[int, int, int]:
        path = self._path
        if path is None:
            return (0, 0, 0)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return (0, 0, 0)
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def fresh(self) -> Registry:
        """The registry, read again first if its file changed since it was last read."""
        if self._path is not None:
            with self._lock:
                stamp = self._now_stamp()
                if stamp != self._stamp:
                    self.registry.reload()
                    self._stamp = stamp
        return self.registry

    def principal(self, name: str) -> Principal | None:
        return self.fresh().principal(name)


class Guard:
    """Verifies the proof a call came with: the one check at the top of each
    user-facing method.  ``check`` returns the :class:`VerifiedCaller` or a
    :class:`Refusal` (``auth.no_proof`` for no proof at all, else the
    :class:`Verifier`'s code); ``require`` raises :class:`AuthRefusedError`."""

    def __init__(self, verifier: Verifier) -> None:
        self.verifier = verifier

    @classmethod
    def for_home(cls, home: str | os.PathLike[str], *, by: str = "auth", clock: Callable[[], float] = time.time,
                 audience: Iterable[str] = ()) -> Guard:
        """A guard over the registry of ``home`` for the actor ``by`` (and the
        other names in ``audience``), refusing proofs issued before now (so a
        restarted actor cannot accept a proof twice) and proofs made out to
        any other actor."""
        registry = Registry(auth_home(home))
        return cls(Verifier(ReloadingRegistry(registry), clock, accept_from=clock() - 5.0, by=by, audience=audience))

    def check(self, proof: Any, call: str, args: Any) -> VerifiedCaller | Refusal:
        if proof is None:
            return Refusal(code=codes.AUTH_NO_PROOF, by=self.verifier.by,
                           reason=f"{call} needs a signed proof of who calls (load your credential: legionrm user add)")
        return self.verifier.verify_args(proof, call, args)

    def require(self, proof: Any, call: str, args: Any) -> VerifiedCaller:
        got = self.check(proof, call, args)
        if isinstance(got, Refusal):
            raise AuthRefusedError(got.code, got.reason, got.by)
        return got


def raise_if_refused(outcome: Any) -> None:
    """Raise :class:`AuthRefusedError` for a falsy role outcome (a Refusal)."""
    if isinstance(outcome, Refusal):
        raise AuthRefusedError(outcome.code, outcome.reason, outcome.by)


# --- keys under the home -------------------------------------------------------------------


def agent_key_path(home: str | os.PathLike[str], principal: str) -> Path:
    return auth_home(home) / AGENTS_DIR / (principal.replace(":", "_") + ".key")


def ensure_home(home: str | os.PathLike[str], operator: str | None = None) -> Registry:
    """The registry of ``home``, with what a running system needs made if
    missing: an ``admin`` user for ``operator`` (default: the login name)
    when there is no administrator, and the Scheduler's and Enactor's agent keys
    (kept 0600 under ``auth/agents/``; made anew each time, so a new ``up``
    gets new keys).  Idempotent for users."""
    registry = Registry(auth_home(home))
    if not any("admin" in u.roles for u in registry.list_users()):
        name = operator or login_name()
        if registry.principal(name) is None:
            registry.add_user(name, roles=("admin",))
        else:
            registry.update_user(name, roles=("admin", *registry.user(name).roles))
    private_dir(auth_home(home) / AGENTS_DIR)
    for kind, name in (("scheduler", "scheduler"), ("enactor", "enactor"), ("dashboard", "dashboard"),
                       ("gateway", "gateway")):
        cred = registry.add_agent(kind, name)
        save_private_key(agent_key_path(home, cred.name), cred.private_key, overwrite=True)
    return registry


def load_agent(home: str | os.PathLike[str], principal: str) -> Credential:
    """An agent's credential as :func:`ensure_home` wrote it."""
    return Credential.load(principal, agent_key_path(home, principal))


def load_user(home: str | os.PathLike[str], user: str | None = None) -> Credential:
    """``user``'s (default: the login name's) credential from their own key file.
    ``UnknownPrincipalError`` naming the fix when there is none."""
    name = user or login_name()
    registry = Registry(auth_home(home))
    try:
        return Credential(name=name, private_key=load_private_key(registry.key_path(name)))
    except KeyFileError as exc:
        if "no such key file" in str(exc):
            raise UnknownPrincipalError(
                f"no credential for user {name!r} under {auth_home(home)} "
                f"(an administrator adds you with: legionrm user add {name})") from None
        raise


def signer_for(home: str | os.PathLike[str], user: str | None = None, ttl_s: float = 60.0) -> CallSigner:
    """A signer for ``user`` (default: the login name) of the system at ``home``."""
    return CallSigner(load_user(home, user), time.time, ttl_s)


def host_attestations(home: str | os.PathLike[str], *, by: str = "host") -> AttestationVerifier:
    """What a host checks attestations with: the public key of a scheduler
    agent, looked up in the registry of ``home`` at each check (so a key
    issued anew is never checked against its old one), refusing attestations
    issued before now (a restarted host forgot which it spent)."""
    source = ReloadingRegistry(Registry(auth_home(home)))

    def scheduler_key(name: str) -> str | None:
        p = source.principal(name)
        return p.public_key if p is not None and p.kind == "scheduler" else None

    return AttestationVerifier(scheduler_key, time.time, by=by, accept_from=time.time() - 5.0)


def new_agent_key() -> Any:  # for tests: a key not in any registry
    return generate_private_key()



__all__ = ["AuthRefusedError", "Guard", "ReloadingRegistry", "ensure_home", "load_agent", "load_user",
           "signer_for", "host_attestations", "raise_if_refused", "SCHEDULER", "ENACTOR", "GATEWAY", "CallProof"]
