"""Errors of the auth core (programming and setup mistakes, not refusals).

A proof that fails to verify is an ordinary outcome and comes back as a
:class:`~legionrm.models.Refusal` with an :mod:`~legionrm.codes` code.
These exceptions are for what an administrator or a program must fix: a key
file others can read, a name that is not a name, a user who already exists.
"""

from __future__ import annotations

from legionrm.errors import LegionError


class AuthError(LegionError):
    """Root of every auth error."""


class KeyFileError(AuthError):
    """A key file that cannot be read, written or parsed; names the file."""

    def __init__(self, message: str, *, path: str = "") -> None:
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


class KeyPermissionError(KeyFileError):
    """A private key file readable or writable by group or others."""

    def __init__(self, path: str, mode: int) -> None:
        self.mode = mode
        super().__init__(
            f"private key file has mode {mode:04o}; it must be readable only by its owner "
            f"(fix with: chmod 600 {path})",
            path=path,
        )


class InvalidNameError(AuthError, ValueError):
    """A user, group, role or resource name that breaks the naming rules."""


class RegistryError(AuthError):
    """A registry change that cannot be made (a user that exists, or does not)."""


class UnknownPrincipalError(RegistryError, KeyError):
    """A name the registry does not hold."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else "unknown principal"


class AuthRefusedError(AuthError):
    """A call refused by the auth checks, raised where the call's answer has no
    room for a :class:`~legionrm.models.Refusal` (a list, a request's info).
    ``code`` is the refusal's :mod:`~legionrm.codes` code, so the command
    line prints it as one line with that code."""

    def __init__(self, code: str, reason: str, by: str = "auth") -> None:
        self.code, self.reason, self.by = code, reason, by
        super().__init__(f"{code}: {reason}")

    def __reduce__(self):  # type: ignore[no-untyped-def]  # crosses Ray as itself
        return (AuthRefusedError, (self.code, self.reason, self.by))
