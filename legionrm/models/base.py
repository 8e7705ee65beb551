"""Values, outcomes, identity and access, and the Collection's records and answers."""

from __future__ import annotations

import time
from typing import Any, Literal, Mapping, Sequence, Union

from pydantic import BaseModel, ConfigDict, Field

AttrValue = Union[bool, int, float, str]
"""A value a resource may export as an attribute (bool before int: order matters)."""


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    def replaced(self, **changes: Any) -> Any:
        """A copy with ``changes`` (trusted, already valid values), without
        validation: ``model_copy(update=...)`` for a hot path (a heartbeat)."""
        cls = self.__class__
        m = cls.__new__(cls)
        _set_dict(m, {**self.__dict__, **changes})  # (the fields in their order, the changed ones' values new)
        fs = self.__pydantic_fields_set__
        _set_fields_set(m, fs if fs.issuperset(changes) else fs | set(changes))
        _set_extra(m, None)
        _set_private(m, None)
        return m

    @classmethod
    def trusted_many(cls, fixed: Mapping[str, Any], **columns: Sequence[Any]) -> list[Any]:
        """Instances from trusted, already valid values, without validation:
        the fields in ``fixed`` are the same for all, and instance *i* takes
        ``columns[f][i]`` for each field ``f`` of ``columns`` (equal lengths);
        other fields take their defaults (a default factory is not supported).
        What ``model_construct`` does, about twice as fast, for a hot path
        that builds thousands (the planner's placements).  Raises TypeError
        for a required field that is given neither way."""
        fields = cls.model_fields
        missing = [k for k, f in fields.items() if k not in fixed and k not in columns and f.is_required()]
        if missing:
            raise TypeError(f"{cls.__name__}.trusted_many: required fields {missing} not given")
        template = {k: fixed[k] if k in fixed else (None if k in columns else f.get_default())
                    for k, f in fields.items()}
        fields_set = set(fixed) | set(columns)  # shared: a frozen model never changes it (model_copy copies it)
        names = tuple(columns)
        new, out = cls.__new__, []
        for vals in zip(*columns.values()):
            m = new(cls)
            d = template.copy()
            d.update(zip(names, vals))
            _set_dict(m, d)
            _set_fields_set(m, fields_set)
            _set_extra(m, None)
            _set_private(m, None)
            out.append(m)
        return out


    @classmethod
    def trusted(cls, **values: Any) -> Any:
        """One instance from trusted, already valid ``values`` (the rest take their defaults), as
        :meth:`trusted_many` makes them; TypeError for a required field not given or a name no field has.
        The instances made from the same field names share one fields-set (as :meth:`trusted_many`'s do)."""
        shape = _SHAPES.get((cls, *values))
        if shape is None:  # (once per class and names given: the defaults in field order, the fields set)
            fields = cls.model_fields
            needed = {k for k, f in fields.items() if f.is_required() or f.default_factory}
            if not needed <= values.keys() or not values.keys() <= fields.keys():
                raise TypeError(f"{cls.__name__}.trusted: give {sorted(needed)}, and only fields, not {sorted(values)}")
            shape = _SHAPES[(cls, *values)] = (
                {k: None if f.is_required() else f.get_default() for k, f in fields.items()}, set(values))
        template, fields_set = shape
        m = cls.__new__(cls)
        d = template.copy()
        d.update(values)
        _set_dict(m, d)
        _set_fields_set(m, fields_set)
        _set_extra(m, None)
        _set_private(m, None)
        return m


    @classmethod
    def adopt(cls, values: dict[str, Any]) -> Any:
        """One instance whose fields are ``values`` itself: every field, in field order, each trusted and
        already valid (the dict becomes the model's own: the caller keeps no hold of it).  What
        :meth:`trusted` makes of them, without a copy; the instances adopted share one fields-set."""
        m = cls.__new__(cls)
        _set_dict(m, values)
        fs = _ALL_SET.get(cls)
        if fs is None:
            fs = _ALL_SET[cls] = set(cls.model_fields)
        _set_fields_set(m, fs)
        _set_extra(m, None)
        _set_private(m, None)
        return m


_ALL_SET: dict[type, set[str]] = {}
"""Per model class, the fields-set its adopted instances share (every field given)."""

_SHAPES: dict[tuple, tuple[dict[str, Any], set[str]]] = {}
"""Per model class and the field names :meth:`Frozen.trusted` is given: the class's defaults in field
order, and the one fields-set its instances share (a frozen model never changes it; a copy copies it)."""

# pydantic keeps these in slots of BaseModel: their descriptors set them fastest
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


# --- outcomes ----------------------------------------------------------------


class Refusal(Frozen):
    """A typed "no": who refused, with a machine-readable code and a reason.

    ``code`` is a dotted reason code (``capacity``, ``policy.user``,
    ``token.expired`` ...); ``by`` names what refused (a resource, a policy,
    a filter) so a user can ask "why not host X".
    """

    code: str
    reason: str
    by: str = ""
    lasting: bool = False
    """The owner says waiting will not change it (``lasting = true``): the
    scheduler stops asking this resource for that request."""

    def __bool__(self) -> bool:  # a refusal is never truthy, so `if result:` reads right
        return False


# --- identity and access -----------------------------------------------------


class Identity(Frozen):
    """Who is asking: a user, optionally the class whose instance is placed,
    and the groups the user belongs to (owner policies may admit by group)."""

    user: str
    class_name: str | None = None
    groups: tuple[str, ...] = ()


class AccessPolicy(Frozen):
    """Who a resource accepts, as its owner declared it.

    Empty allow lists mean "anyone"; a deny entry always wins over an allow.
    The Collection applies this when a query names a caller, as Legion's
    collection answers only with resources that would accept that caller.
    """

    allow_users: tuple[str, ...] = ()
    deny_users: tuple[str, ...] = ()
    allow_classes: tuple[str, ...] = ()
    deny_classes: tuple[str, ...] = ()
    allow_groups: tuple[str, ...] = ()

    def accepts(self, caller: Identity | None) -> bool:
        """True when ``caller`` may use the resource (None: no caller, accept)."""
        if caller is None:
            return True
        if caller.user in self.deny_users:
            return False
        if caller.class_name is not None and caller.class_name in self.deny_classes:
            return False
        if self.allow_users or self.allow_groups:
            ok_user = caller.user in self.allow_users
            ok_group = any(g in self.allow_groups for g in caller.groups)
            if not (ok_user or ok_group):
                return False
        if self.allow_classes and caller.class_name not in self.allow_classes:
            return False
        return True


# --- the collection ----------------------------------------------------------

ResourceKind = Literal["host", "vault"]


class ResourceRecord(Frozen):
    """What the Collection knows of one resource."""

    name: str
    kind: ResourceKind = "host"
    nodepool: str | None = None
    attributes: dict[str, AttrValue] = Field(default_factory=dict)
    access: AccessPolicy = AccessPolicy()
    available: bool = True
    last_heartbeat: float = Field(default_factory=time.time)


class QueryResult(Frozen):
    """The answer to a Collection query: the matching records, in name order."""

    query: str
    records: tuple[ResourceRecord, ...]
    considered: int
    elapsed_ms: float

    @property
    def names(self) -> list[str]:
        return [r.name for r in self.records]




class RefusedWrite(Frozen):
    """A resource's write (join, heartbeat, leave) the Collection refused,
    latest first: why a resource does not answer (``status``, ``up``).
    ``principal`` is who signed it (``host:h3``); ``count`` how many in a row."""

    resource: str
    principal: str = ""
    code: str
    reason: str
    at: float
    count: int = 1

    @property
    def who(self) -> str:
        return self.principal or self.resource
