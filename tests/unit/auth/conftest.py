"""Shared fixtures for the auth core tests: a controllable clock, a registry, users."""

from __future__ import annotations

import pytest

from legionrm.auth import Credential, Registry, Verifier

T0 = 1_000_000.0


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def registry() -> Registry:
    return Registry(None)


@pytest.fixture
def ann(registry: Registry) -> Credential:
    return registry.add_user("ann", groups=["physics"])


@pytest.fixture
def verifier(registry: Registry, clock: Clock) -> Verifier:
    return Verifier(registry, clock, max_ttl_s=60.0, skew_s=2.0, by="scheduler")
