"""Scheduling requests written as TOML, for ``legionrm submit REQUEST.toml``.

The file is a :class:`~legionrm.models.SchedulingRequest` with one
``[[object]]`` table per object request::

    request_id = "nightly-1"          # optional: generated when absent
    pool = "/research"                # optional: the resource pool, default "/"
    activate = []                     # optional: existing objects to activate

    [identity]
    user = "alice"
    groups = ["genomics"]

    [[object]]
    class_name = "Worker"
    count = 2
    cpus = 12
    memory_gb = 8
    placement = "scatter"             # pack | scatter | vscatter | free
    constraint = '$gpus == 0 and $site == "uva"'

Every problem is a :class:`ConfigError` naming the table (``object[1]``) and
the key; a MIL constraint that does not parse names its position.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from legionrm.errors import ConfigError, MILError
from legionrm.mil import compile_query
from legionrm.models import Identity, ObjectRequest, SchedulingRequest
from legionrm.tomlio import check_keys, expect, load_toml, require, tables

TOP_KEYS = ("request_id", "pool", "activate", "identity", "object", "wait")


def parse_request(doc: dict[str, Any], *, file: str = "<memory>") -> SchedulingRequest:
    """A validated request from a parsed TOML document.  Raises ConfigError."""
    check_keys(doc, TOP_KEYS, file=file, where="")
    ident = require(doc, "identity", dict, file=file, where="")
    check_keys(ident, Identity.model_fields, file=file, where="identity")
    identity = _model(Identity, ident, file, "identity")
    objects = []
    for i, t in enumerate(tables(doc, "object", file)):
        where = f"object[{i}]"
        check_keys(t, ObjectRequest.model_fields, file=file, where=where)
        obj = _model(ObjectRequest, t, file, where)
        for key in ("constraint", "vault_constraint"):
            try:
                compile_query(getattr(obj, key))
            except MILError as exc:
                raise ConfigError(str(exc), file=file, table=where, key=key) from None
        objects.append(obj)
    activate = expect(doc, "activate", list, [], file=file, where="")
    if not objects and not activate:
        raise ConfigError("the request asks for nothing: add an [[object]] table or an activate list", file=file)
    rid = expect(doc, "request_id", str, None, file=file, where="") or f"req-{uuid.uuid4().hex[:12]}"
    return _model(SchedulingRequest, dict(
        request_id=rid, identity=identity, pool=expect(doc, "pool", str, "/", file=file, where=""),
        wait=expect(doc, "wait", bool, True, file=file, where=""),
        objects=tuple(objects), activate=tuple(activate),
    ), file, "")


def load_request(path: str | Path) -> SchedulingRequest:
    """Read and validate a request file.  Raises ConfigError."""
    return parse_request(load_toml(path), file=str(path))


def _model(cls: type, values: dict[str, Any], file: str, where: str) -> Any:
    try:
        return cls(**values)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(err["msg"], file=file, table=where, key=".".join(map(str, err["loc"]))) from None
