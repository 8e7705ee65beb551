"""What a client call raises: :class:`~legionrm.errors.LegionError` subclasses carrying the gateway's code.

Never a Ray exception and never an HTTP library's: the gateway's answer
``{"code", "reason", "by"}`` becomes one of these, by its HTTP status.
"""

from __future__ import annotations

from legionrm import codes
from legionrm.errors import LegionError


class GatewayError(LegionError):
    """An answer from the gateway that is not a success: ``code``, ``reason``, ``by`` and the HTTP ``status``."""

    def __init__(self, code: str, reason: str, by: str = "gateway", status: int = 0) -> None:
        super().__init__(f"{code}: {reason}" + (f" (by {by})" if by and by != "gateway" else ""))
        self.code, self.reason, self.by, self.status = code, reason, by, status


class AuthenticationError(GatewayError):
    """401: the call's signature was refused (unsigned, unknown user, bad signature, expired, replayed)."""


class ForbiddenError(GatewayError):
    """403: a proven user who may not do this (not an admin, not the request's owner)."""


class NotFoundError(GatewayError):
    """404: no such request, user or path."""


class BadRequestError(GatewayError):
    """400 / 422: a body or a request file that is not right."""


class TooLargeError(GatewayError):
    """413: the body is over the gateway's size limit."""


class RateLimitedError(GatewayError):
    """429: the user is over their rate."""


class NotAvailableError(GatewayError):
    """501 / 503: the gateway cannot do this yet, or the system behind it is not answering."""


class ConnectionFailedError(GatewayError):
    """The gateway could not be reached (or its TLS certificate is not the pinned one)."""


class CredentialsError(LegionError):
    """No usable credentials file (missing, unreadable, too open, malformed)."""

    code = codes.CREDENTIALS


BY_STATUS: dict[int, type[GatewayError]] = {
    400: BadRequestError, 401: AuthenticationError, 403: ForbiddenError, 404: NotFoundError, 409: BadRequestError,
    413: TooLargeError, 422: BadRequestError, 429: RateLimitedError, 501: NotAvailableError, 503: NotAvailableError,
}


def error_for(status: int, code: str, reason: str, by: str = "gateway") -> GatewayError:
    """The exception for an error answer with this HTTP ``status``."""
    return BY_STATUS.get(status, GatewayError)(code, reason, by, status)
