"""One validated reservation request per enactment, the rest built from it
(:class:`legionrm.enactor.mapping.RequestShape`): each request is the one the
model would validate from the same values, and a value the model refuses is
still refused."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from legionrm.enactor.mapping import RequestShape
from legionrm.models import EnactRequest, Holder, ReservationRequest, Resources

REQ = EnactRequest(request_id="r1", holder=Holder(user="ann", class_name="Worker", groups=("g",)), masters=(),
                   timeout_s=45, start=100)

ITEMS = [  # (request_id, resource, resources, vault, duration_s, attestation)
    ("r1/a/host/0", "h1", Resources(cpus=4, memory_gb=8), None, None, None),
    ("r1/b/host/0", "h2", Resources(cpus=1, gpus=1), "v1", 60, {"sig": "x"}),
    ("r1/c/host/0", "h3", Resources(cpus=2, exclusive=True), None, 7.5, None),
    ("r1/c/vault/0", "v1", Resources(storage_gb=3), None, math.inf, None),
    ("r1/d/host/1", "h1", Resources(cpus=0.5), None, None, None),
]


def _validated(rid, resource, resources, vault, duration, attestation) -> ReservationRequest:
    return ReservationRequest(request_id=rid, resource=resource, holder=REQ.holder, resources=resources, vault=vault,
                              start=REQ.start, duration_s=duration, timeout_s=REQ.timeout_s, attestation=attestation)


@pytest.mark.parametrize("order", [ITEMS, ITEMS[::-1]], ids=["in-order", "reversed"])
def test_each_request_is_the_validated_one(order) -> None:
    shape = RequestShape(REQ)
    for rid, resource, resources, vault, duration, attestation in order:
        got = shape.request(request_id=rid, resource=resource, resources=resources, vault=vault, duration_s=duration,
                            attestation=attestation)
        want = _validated(rid, resource, resources, vault, duration, attestation)
        assert got == want
        assert got.model_dump() == want.model_dump()
        assert {k: type(v) for k, v in got.__dict__.items()} == {k: type(v) for k, v in want.__dict__.items()}


@pytest.mark.parametrize("duration", [0, -1.0, math.nan], ids=["zero", "negative", "nan"])
def test_a_duration_the_model_refuses_is_refused(duration) -> None:
    shape = RequestShape(REQ)
    shape.request(request_id="r1/a/host/0", resource="h1", resources=Resources(cpus=1), vault=None, duration_s=None,
                  attestation=None)  # the shape is made
    with pytest.raises(ValidationError):
        shape.request(request_id="r1/b/host/0", resource="h2", resources=Resources(cpus=1), vault=None,
                      duration_s=duration, attestation=None)
