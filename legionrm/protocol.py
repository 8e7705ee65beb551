"""The gateway's wire protocol, shared by both ends and free of pydantic.

The gateway (:mod:`legionrm.gateway`) and the client (:mod:`legionrm.client`)
agree on these; :mod:`legionrm.models.api` re-exports them beside the bodies.
They live here, not among the models, so that a client (``legionrm list``)
can sign and send a call without importing a model.
"""

from __future__ import annotations

API_PREFIX = "/api/v1"
"""Every path of this version of the API starts here."""
AS_HEADER = "Legionrm-As"
"""An administrator's call made as another user (``--as USER``); covered by the signature."""
SIGNATURE_LABEL = "legionrm"
"""The label of the one RFC 9421 signature a call carries (``Signature-Input: legionrm=(...)``)."""
COVERED = ("@method", "@path", "@query", "content-digest")
"""What every call's signature covers (RFC 9421 components), with ``created``, ``nonce``,
``keyid`` (the user) and ``alg`` (``ed25519``) as its parameters; with ``--as`` also the
``legionrm-as`` header."""
MAX_SKEW_S = 60
"""A signature created more than this many seconds from the gateway's clock is refused."""
