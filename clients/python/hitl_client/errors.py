"""What the client raises: `HitlError` and its subclasses, nothing else of its own."""

from __future__ import annotations

from collections.abc import Mapping

from hitl_client.request_info import RequestInfo


class HitlError(Exception):
    """Any failure the client reports."""


class HitlApiError(HitlError):
    """The bridge answered with an HTTP error: `error` is its code (unauthorized, invalid,
    not_found, too_large, unavailable…), `fields` the invalid fields of a 400."""

    def __init__(
        self, status: int, error: str, message: str, fields: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(f"{status} {error}: {message}")
        self.status = status
        self.error = error
        self.message = message
        self.fields = dict(fields or {})


class HitlConnectionError(HitlError):
    """The bridge could not be reached (or dropped the connection), retries included."""


class RequestNotAnswered(HitlError):
    """A request settled without an answer; the subclass says how."""

    def __init__(self, reason: str | None, answered_by: str | None, request: RequestInfo) -> None:
        super().__init__(
            f"request {request.id} {request.status}" + (f": {reason}" if reason else "")
        )
        self.reason = reason
        self.answered_by = answered_by
        self.request = request


class RequestDeclined(RequestNotAnswered):
    """The person declined (for an approval, a "no" is a decline); `reason` is theirs."""


class RequestExpired(RequestNotAnswered):
    """Nobody answered before the request's deadline."""


class RequestCancelled(RequestNotAnswered):
    """The request was withdrawn (by its requester, or by an admin)."""


class RequestUndeliverable(RequestNotAnswered):
    """The request could not be shown to anyone (an unknown person, a refused post…)."""


_RAISED: dict[str, type[RequestNotAnswered]] = {
    "declined": RequestDeclined,
    "expired": RequestExpired,
    "cancelled": RequestCancelled,
    "undeliverable": RequestUndeliverable,
}


def raise_unless_answered(request: RequestInfo) -> None:
    """Raise the error of a request that did not end answered (HitlError if still pending)."""
    if request.status == "answered":
        return
    if request.status == "pending":
        raise HitlError(f"request {request.id} is still pending")
    raise _RAISED[request.status](request.reason, request.answered_by, request)
