"""The fair-share tree: groups with shares, users with shares in their group, and each user's factor.

A user's normalized share is their group's part of all groups' shares times
their part of their group's users' shares::

    S(u) = s(g) / sum of s(g') over all groups  *  s(u) / sum of s(u') over u' in g

A user no ``[[fairshare.group]]`` names is in the group ``default`` with one
share (that group has one share unless the file gives it some).  Their
normalized usage is their part of everyone's decayed usage, and their factor
Slurm's classic ``2^(-U/S)``::

    U(u) = decayed(u) / sum of decayed(u') over all users     (0 while nobody used anything)
    F(u) = 2^(-U(u) / S(u))                                   (0 for a user with no share)

so a user who used exactly their share has 0.5, one who used nothing 1, and
more usage never raises a user's factor.  Pure: no Ray.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from legionrm.models.priority import ShareRow
from legionrm.scheduler.priority.settings import DEFAULT_GROUP, Group
from legionrm.scheduler.priority.usage import Usage


def factor(norm_usage: float, norm_share: float) -> float:
    """``2^(-norm_usage / norm_share)``; 0 with no share (and usage), 1 with neither."""
    if norm_share <= 0:
        return 1.0 if norm_usage <= 0 else 0.0
    return 2.0 ** (-norm_usage / norm_share)


class ShareTree:
    """The configured ``groups`` and, in the ``default`` group, every other user seen."""

    def __init__(self, groups: Iterable[Group]) -> None:
        self.groups = {g.name: g for g in groups}
        self._group_of = {u: g.name for g in self.groups.values() for u in g.users}
        self._shares: tuple[frozenset[str], dict[str, float]] | None = None  # the last norm_shares: its users, its answer

    def group_of(self, user: str) -> str:
        return self._group_of.get(user, DEFAULT_GROUP)

    def _members(self, users: Iterable[str]) -> dict[str, dict[str, float]]:
        """Group -> its users' shares: the configured ones, and each other user in ``users`` in ``default``."""
        members = {name: dict(g.users) for name, g in self.groups.items()}
        for user in users:
            if user not in self._group_of:
                members.setdefault(DEFAULT_GROUP, {})[user] = 1.0
        return members

    def _parts(self, members: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
        """Each group's part of all groups' shares."""
        gshares = {g: (self.groups[g].shares if g in self.groups else 1.0) for g in members}
        total = sum(gshares.values())
        return {g: s / total if total > 0 else 0.0 for g, s in gshares.items()}

    def norm_shares(self, users: Iterable[str]) -> dict[str, float]:
        """Every user's normalized share (configured users and ``users``)."""
        members = self._members(users)
        parts = self._parts(members)
        out: dict[str, float] = {}
        for g, shares in members.items():
            inside = sum(shares.values())
            for user, s in shares.items():
                out[user] = parts[g] * (s / inside if inside > 0 else 0.0)
        return out

    def factors(self, usage: Mapping[str, float], users: Iterable[str] = (),
                only: Iterable[str] | None = None) -> dict[str, float]:
        """Each user's factor given everyone's decayed ``usage`` (users in it and ``users``); with
        ``only``, just those of these (each the same figure: a queue's pass reads its waiting users')."""
        every = frozenset(usage).union(users)
        kept = self._shares  # (the shares depend on the users alone: kept while they are the same)
        if kept is None or kept[0] != every:
            kept = self._shares = (every, self.norm_shares(every))
        shares = kept[1]
        total = sum(max(0.0, v) for v in usage.values())
        get = usage.get
        return {u: factor(max(0.0, get(u, 0.0)) / total if total > 0 else 0.0, s)
                for u, s in (shares.items() if only is None else ((u, shares[u]) for u in only if u in shares))}

    def rows(self, usage: Mapping[str, Usage], users: Iterable[str] = ()) -> list[ShareRow]:
        """The tree as ``legionrm share`` prints it: each group, then its users, by name."""
        every = set(usage) | set(users)
        members = self._members(every)
        shares, parts = self.norm_shares(every), self._parts(members)
        total = sum(max(0.0, u.decayed) for u in usage.values())
        none = Usage()
        out: list[ShareRow] = []
        for g in sorted(members):
            users_g = sorted(members[g])
            raw = sum(usage.get(u, none).raw for u in users_g)
            dec = sum(usage.get(u, none).decayed for u in users_g)
            gnorm = parts[g]
            gu = dec / total if total > 0 else 0.0
            out.append(ShareRow(group=g, shares=self.groups[g].shares if g in self.groups else 1.0, norm_shares=gnorm,
                                raw_usage=raw, decayed_usage=dec, norm_usage=gu, factor=factor(gu, gnorm)))
            for u in users_g:
                use = usage.get(u, none)
                nu = use.decayed / total if total > 0 else 0.0
                out.append(ShareRow(group=g, user=u, shares=members[g][u], norm_shares=shares[u], raw_usage=use.raw,
                                    decayed_usage=use.decayed, norm_usage=nu, factor=factor(nu, shares[u])))
        return out
