"""Request files for `legionrm submit`: what parses, and errors that say where."""

from __future__ import annotations

from pathlib import Path

import pytest

from legionrm.errors import ConfigError
from legionrm.request_file import load_request, parse_request

IDENT = {"identity": {"user": "alice"}}
OBJ = {"class_name": "Worker"}


def test_the_example_file_parses() -> None:
    r = load_request("examples/requests/workers.toml", user="alice")
    assert r.request_id.startswith("req-") and r.identity.user == "alice" and r.pool == "/"
    assert r.objects[0].count == 2 and r.objects[0].placement == "scatter"


def test_the_examples_name_no_request_id_and_no_identity() -> None:
    """So a second submit does not conflict, and anyone may submit them (their signature is their identity)."""
    for f in Path("examples/requests").glob("*.toml"):
        keys = [ln.split("=")[0].strip() for ln in f.read_text().splitlines() if not ln.startswith("#")]
        assert "request_id" not in keys and "[identity]" not in keys, f


def test_a_missing_request_id_is_generated_and_unique() -> None:
    a, b = (parse_request({**IDENT, "object": [OBJ]}) for _ in range(2))
    assert a.request_id.startswith("req-") and a.request_id != b.request_id


@pytest.mark.parametrize(
    "doc, where",
    [
        pytest.param({"object": [OBJ]}, "identity", id="no-identity"),
        pytest.param({**IDENT, "object": [OBJ], "colour": 1}, "colour", id="unknown-top-key"),
        pytest.param({**IDENT, "object": [OBJ, {**OBJ, "count": 0}]}, "object[1].count", id="count-zero"),
        pytest.param({**IDENT, "object": [{**OBJ, "cpu": 2}]}, "object[0].cpu: unknown key", id="misspelt-key"),
        pytest.param({"identity": {"user": "alice", "colour": 1}, "object": [OBJ]}, "identity.colour: unknown key",
                     id="unknown-identity-key"),
        pytest.param({**IDENT, "object": [{**OBJ, "placement": "spread"}]}, "object[0].placement", id="bad-placement"),
        pytest.param({**IDENT, "object": [{**OBJ, "constraint": "$cpus >>= 2"}]}, "object[0].constraint", id="bad-mil"),
        pytest.param({**IDENT}, "asks for nothing", id="empty"),
        pytest.param({**IDENT, "object": [OBJ], "on_preempt": "kill"}, "on_preempt", id="bad-on-preempt"),
        pytest.param({**IDENT, "object": [{**OBJ, "after": ["a", 1]}]}, "object[0].after", id="after-not-names"),
        pytest.param({**IDENT, "object": [{**OBJ, "name": "no spaces"}]}, "object[0].name", id="bad-name"),
    ],
)
def test_bad_files_name_the_place(doc, where) -> None:
    with pytest.raises(ConfigError) as exc:
        parse_request(doc, file="r.toml")
    assert "r.toml" in str(exc.value) and where in str(exc.value)


@pytest.mark.parametrize("on_preempt", [None, "requeue", "cancel"], ids=["default", "requeue", "cancel"])
def test_on_preempt_name_and_after_are_read(on_preempt: str | None) -> None:
    doc = {**IDENT, "object": [{**OBJ, "name": "db"}, {**OBJ, "after": ["db"]}],
           **({"on_preempt": on_preempt} if on_preempt else {})}
    r = parse_request(doc)
    assert r.on_preempt == on_preempt and r.objects[0].name == "db" and r.objects[1].after == ("db",)
