"""When a call to the bridge is tried again, and after how long."""

from __future__ import annotations

from dataclasses import dataclass

import httpx

# A dropped or timed-out connection may succeed next time; a bad URL or a TLS setting won't.
TRANSIENT = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)
MAX_DELAY = 60.0  # seconds: the longest Retry-After obeyed


@dataclass(frozen=True, slots=True)
class Retries:
    """`attempts` retries after the first try, `backoff` doubling between them (or the
    server's Retry-After, up to a minute)."""

    attempts: int = 3
    backoff: float = 0.5

    def __post_init__(self) -> None:
        if self.attempts < 0 or self.backoff < 0:
            raise ValueError("retries and backoff must be 0 or more")

    @staticmethod
    def retried(status: int) -> bool:
        """Whether an answer with this status is tried again: busy or failing, not refused."""
        return status == 429 or status >= 500

    def delay(self, attempt: int, retry_after: str | None = None) -> float:
        """Seconds to sleep before retry number `attempt` (0 for the first)."""
        if retry_after is not None:
            try:
                asked = float(retry_after)
            except ValueError:
                asked = -1.0  # an HTTP date: rare enough to back off as usual instead
            if asked >= 0:
                return min(asked, MAX_DELAY)
        return float(self.backoff * 2**attempt)
