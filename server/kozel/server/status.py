"""The servicer edge: the referee's refusals as gRPC status codes."""

from __future__ import annotations

import grpc

from kozel.server import errors

GRPC_STATUS: dict[type[errors.Refused], grpc.StatusCode] = {
    errors.NotFound: grpc.StatusCode.NOT_FOUND,
    errors.AlreadyExists: grpc.StatusCode.ALREADY_EXISTS,
    errors.Invalid: grpc.StatusCode.INVALID_ARGUMENT,
    errors.Exhausted: grpc.StatusCode.RESOURCE_EXHAUSTED,
    errors.Unauthenticated: grpc.StatusCode.UNAUTHENTICATED,
    errors.Unavailable: grpc.StatusCode.UNAVAILABLE,
    errors.Conflict: grpc.StatusCode.FAILED_PRECONDITION,
    errors.Expired: grpc.StatusCode.DEADLINE_EXCEEDED,
    errors.Aborted: grpc.StatusCode.ABORTED,
    errors.Cancelled: grpc.StatusCode.CANCELLED,
}


def grpc_status(exc: errors.Refused) -> grpc.StatusCode:
    """The gRPC status for a refusal (by its kind; UNKNOWN for a kind not listed)."""
    for kind in type(exc).__mro__:
        if kind in GRPC_STATUS:
            return GRPC_STATUS[kind]
    return grpc.StatusCode.UNKNOWN
