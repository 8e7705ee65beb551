"""Custom resource kinds and the autoscaler in the files (issue 27 items 3 and
5): a request's ``resources = { NAME = n }``, a host's, and ``[autoscaler]``."""

from __future__ import annotations

import pytest

from legionrm.config import parse_cluster
from legionrm.errors import ConfigError
from legionrm.request_file import parse_request


def request(obj: dict) -> dict:
    return {"identity": {"user": "u"}, "object": [{"class_name": "W", **obj}]}


def test_a_request_asks_for_gpus_and_custom_kinds() -> None:
    r = parse_request(request({"gpus": 2, "resources": {"tpu": 1, "fpga": 0.5}}))
    assert r.objects[0].gpus == 2 and r.objects[0].custom() == (("fpga", 0.5), ("tpu", 1.0))


@pytest.mark.parametrize("resources, key", [
    pytest.param({"cpus": 1}, "cpus", id="a-built-in-is-not-a-custom-kind"),
    pytest.param({"9lives": 1}, "9lives", id="a-name-must-not-start-with-a-digit"),
    pytest.param({"tpu": True}, "tpu", id="a-boolean-is-not-an-amount"),
    pytest.param({"tpu": -1}, "tpu", id="no-negative-amounts"),
    pytest.param({"tpu": "one"}, "tpu", id="a-string-is-not-an-amount"),
])
def test_bad_kinds_in_a_request_name_the_place(resources: dict, key: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_request(request({"resources": resources}))
    assert "object[0].resources" in str(err.value) and key in str(err.value)


def test_a_host_offers_custom_kinds_and_the_autoscaler_table_is_read() -> None:
    spec = parse_cluster({"host": [{"name": "h", "attributes": {"cpus": 2}, "resources": {"tpu": 4}}],
                          "autoscaler": {"enabled": True, "max_bundles": 10}})
    assert spec.hosts[0].capacity().custom == (("tpu", 4.0),)
    assert spec.autoscaler.enabled and spec.autoscaler.max_bundles == 10
    assert not parse_cluster({}).autoscaler.enabled


@pytest.mark.parametrize("table", [
    pytest.param({"enabled": "yes"}, id="enabled-not-a-boolean"),
    pytest.param({"max_bundles": 0}, id="max-bundles-below-one"),
    pytest.param({"grow": True}, id="unknown-key"),
])
def test_a_bad_autoscaler_table_is_refused(table: dict) -> None:
    with pytest.raises(ConfigError, match="autoscaler"):
        parse_cluster({"autoscaler": table})
