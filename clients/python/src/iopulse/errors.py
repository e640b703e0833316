"""Exceptions raised by the iopulse client; each names the daemon and says what went wrong."""
from __future__ import annotations

import grpc


class IopulseError(Exception):
    """A call to iopulsed failed. target: the daemon's address; code: the gRPC status code
    name ('' if none); details: what the server (or the transport) said."""

    def __init__(self, message: str, target: str = "", code: str = "", details: str = ""):
        super().__init__(message)
        self.target = target
        self.code = code
        self.details = details


class Unavailable(IopulseError):
    """iopulsed cannot be reached, or is shutting down."""


class InvalidArgument(IopulseError):
    """The daemon rejected the request; details says which field and why."""


class NotFound(InvalidArgument):
    """What the request names does not exist, e.g. an end mark for a phase that is not open."""


class ResourceExhausted(IopulseError):
    """A limit of the daemon was reached (details names it), e.g. server.mark_rate."""


class PermissionDenied(IopulseError):
    """The daemon refused this client the right, e.g. marks over TCP without a client
    certificate server.mark_clients names."""


class DeadlineExceeded(IopulseError):
    """The call did not finish within the client's timeout."""


class Cancelled(IopulseError):
    """The call was cancelled before it finished."""


_BY_CODE = {
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
    grpc.StatusCode.CANCELLED: Cancelled,
}


def from_rpc_error(e: grpc.RpcError, target: str, method: str) -> IopulseError:
    """The iopulse exception for a failed call of method (e.g. 'GetInfo') on target."""
    code = e.code() if hasattr(e, "code") else None
    details = (e.details() if hasattr(e, "details") else None) or str(e)
    cls = _BY_CODE.get(code, IopulseError)
    name = code.name if code is not None else "UNKNOWN"
    if cls is Unavailable and "shutting down" in details:
        msg = f"iopulsed at {target} is unavailable: {details}"
    elif cls is Unavailable and target.startswith("unix:"):
        msg = f"cannot reach iopulsed at {target}: {details} (is iopulsed running?)"
    elif cls is Unavailable:
        msg = (f"cannot reach iopulsed at {target}: {details} (is iopulsed running there, and "
               f"do --tls-ca/--tls-cert match its server.tls_* settings?)")
    else:
        msg = f"{method} at {target} failed: {name}: {details}"
    return cls(msg, target, name, details)


def malformed(target: str, method: str, what: Exception) -> IopulseError:
    """A reply that decodes as protobuf but breaks the contract (e.g. a bad bucket index), or
    that this client cannot decode at all (any exception of the decoder)."""
    return IopulseError(f"{method} at {target}: malformed reply: "
                        f"{type(what).__name__}: {what}", target, "DATA_LOSS", str(what))
