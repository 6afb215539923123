"""The HTTP+JSON binding's error statuses as A2A 1.0 §5.4 tables them. The a2a-sdk (1.3)
answers a few otherwise (TaskNotCancelable 400, not 409; ContentTypeNotSupported 400, not 415;
InvalidAgentResponse 500, not 502; UnsupportedOperation and VersionNotSupported
FAILED_PRECONDITION, not UNIMPLEMENTED): `align` sets its table to the spec's, once, before the
door serves. Each error keeps the SDK's reason (the ErrorInfo the kit reads)."""

from __future__ import annotations

from a2a.utils.errors import (
    A2A_ERROR_MAPPING,
    A2AError,
    ContentTypeNotSupportedError,
    ErrorMapping,
    InvalidAgentResponseError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    UnsupportedOperationError,
    VersionNotSupportedError,
)

SPEC: dict[type[A2AError], tuple[int, str]] = {
    TaskNotCancelableError: (409, "FAILED_PRECONDITION"),
    PushNotificationNotSupportedError: (400, "UNIMPLEMENTED"),
    UnsupportedOperationError: (400, "UNIMPLEMENTED"),
    ContentTypeNotSupportedError: (415, "INVALID_ARGUMENT"),
    InvalidAgentResponseError: (502, "INTERNAL"),
    VersionNotSupportedError: (400, "UNIMPLEMENTED"),
}


def align() -> None:
    for error, (status, code) in SPEC.items():
        reason = A2A_ERROR_MAPPING[error].reason
        A2A_ERROR_MAPPING[error] = ErrorMapping(status, code, reason)
