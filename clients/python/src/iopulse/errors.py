"""Exceptions raised by the iopulse client; each says which daemon and what went wrong."""
from __future__ import annotations

import grpc


class IopulseError(Exception):
    """A call to iopulsed failed."""

    def __init__(self, message: str, target: str = "", code: str = ""):
        super().__init__(message)
        self.target = target
        self.code = code


class Unavailable(IopulseError):
    """iopulsed cannot be reached, or is shutting down."""


class InvalidArgument(IopulseError):
    """The daemon rejected the request; the message says what is wrong."""


class DeadlineExceeded(IopulseError):
    """The call did not finish in time."""


class Cancelled(IopulseError):
    """The call was cancelled (by this client)."""


_BY_CODE = {
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
    grpc.StatusCode.CANCELLED: Cancelled,
}


def from_rpc_error(e: grpc.RpcError, target: str, what: str) -> IopulseError:
    code = e.code() if hasattr(e, "code") else None
    details = e.details() if hasattr(e, "details") else str(e)
    cls = _BY_CODE.get(code, IopulseError)
    name = code.name if code is not None else "UNKNOWN"
    if cls is Unavailable:
        msg = f"cannot reach iopulsed at {target}: {details} (is iopulsed running?)"
    else:
        msg = f"{what} at {target} failed: {name}: {details}"
    return cls(msg, target, name)
