"""A user verb through the gateway imports no more than it needs (issue 24 item 8, issue 29 item 2).

Each verb runs in a fresh interpreter, as a user's shell starts it: ``legionrm.cli``
is imported, the verb's arguments parsed and its module loaded, and it runs as far as
looking for credentials (none there: one line, exit 2).  Then neither Ray nor numpy
may be loaded, nor pydantic, httpx or the signature framework, nor the gateway's
libraries (aiohttp), the MIL parser (lark), http.client (its email parser), ssl,
tomllib or cryptography's public modules: the verbs print from the gateway's JSON,
speak HTTP/1.1 themselves and sign with SHA-256 and Ed25519's binding alone
(:mod:`legionrm.client.wire`, :mod:`legionrm.client.http11`,
:mod:`legionrm.client.signing`).  tests/unit/gateway/test_cli_front.py checks the
same after whole calls through a gateway.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HEAVY = ("ray", "numpy", "pydantic", "legionrm.models", "httpx", "http_message_signatures", "rich", "aiohttp", "lark",
         "http.client", "email", "ssl", "tomllib", "cryptography.hazmat.primitives")
VERBS = [["list"], ["show", "r1"], ["wait", "r1"], ["logs", "r1"], ["cancel", "r1"], ["hosts"], ["pools"],
         ["status"], ["submit", "-"], ["explain", "-"], ["show", "r1", "--follow"]]
PROBE = """
import json, sys
from legionrm.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "loaded": sorted(m for m in %r if m in sys.modules)}))
""" % (HEAVY,)


@pytest.mark.parametrize("argv", VERBS, ids=[" ".join(v) for v in VERBS])
def test_a_gateway_verb_imports_neither_ray_nor_numpy_nor_pydantic(argv: list[str], tmp_path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "HOME": str(tmp_path),
           "LEGIONRM_HOME": str(tmp_path / "home"), "LEGIONRM_CREDENTIALS": str(tmp_path / "none.credentials")}
    out = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, env=env, input="",
                         check=False)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["code"] == 2 and "no such credentials file" in out.stderr  # it ran up to the credentials
    assert got["loaded"] == []
