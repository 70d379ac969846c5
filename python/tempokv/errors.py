"""Typed errors of the TempoKV client.

Every error reply of tempokvd carries ``{code, message}`` where ``code`` is a
``tempokv::StatusCode`` name (docs/protocol.md, "Replies"). The client raises
the subclass of :class:`TempoKVError` named by the code; a code this client
does not know raises :class:`TempoKVError` itself (a later protocol version
may add codes). Errors found on the client side (bad arguments, timeouts, a
closed client) use the same classes.
"""

__all__ = [
    "TempoKVError",
    "NotFound",
    "Corruption",
    "InvalidArgument",
    "ResourceExhausted",
    "Unavailable",
    "Cancelled",
    "FailedPrecondition",
    "Internal",
    "error_from_code",
]


class TempoKVError(Exception):
    """An error of tempokvd or of the client. ``code`` is the StatusCode name."""

    code = "Unknown"

    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class NotFound(TempoKVError):
    code = "NotFound"


class Corruption(TempoKVError):
    code = "Corruption"


class IOError(TempoKVError):  # noqa: A001 - the StatusCode's name; the builtin is OSError
    """The daemon's IOError. Reach it as ``tempokv.IOError`` (not star-exported, so it never
    shadows the builtin alias of OSError)."""

    code = "IOError"


class InvalidArgument(TempoKVError):
    code = "InvalidArgument"


class ResourceExhausted(TempoKVError):
    code = "ResourceExhausted"


class Unavailable(TempoKVError):
    """Also raised when the daemon does not answer within the client's timeout."""

    code = "Unavailable"


class ClaimLost(Unavailable):
    """A claim this client held is gone because tempokvd lost the session (it restarted, or the
    session timed out): the client said hello again, and the daemon no longer knows the request.
    Reach it as ``tempokv.errors.ClaimLost``; it is an :class:`Unavailable`."""


class Cancelled(TempoKVError):
    code = "Cancelled"


class FailedPrecondition(TempoKVError):
    code = "FailedPrecondition"


class Internal(TempoKVError):
    code = "Internal"


_BY_CODE = {
    cls.code: cls
    for cls in (
        NotFound,
        Corruption,
        IOError,
        InvalidArgument,
        ResourceExhausted,
        Unavailable,
        Cancelled,
        FailedPrecondition,
        Internal,
    )
}


def error_from_code(code, message):
    """The exception for an error reply's ``{code, message}``; the base class for unknown codes."""
    code = str(code)
    return _BY_CODE.get(code, TempoKVError)(code, str(message))
