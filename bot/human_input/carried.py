"""The trace a settle handed to another worker was made in, carried in its proposal's id.

A proposal's id is the proposer's to choose: the store only compares it, nothing reads into it
(bot/store/holds.py). It is 16 hex digits, followed by `;` and the W3C `traceparent` of the
proposer's current span when the settle was made inside a trace. The holder applies the
proposal inside that context, so what the settle does there (its span, the surfaces' calls)
joins the trace of the click or the call that made it, rather than starting one of its own.

Which trace is current, and how a context is entered, is the tracing's: adapters/ops/tracing.py
(OpenTelemetry) gives a `TraceCarrier` to the handler; without one, ids are bare.
"""

from __future__ import annotations

import contextlib
import re
import secrets
from contextlib import AbstractContextManager
from typing import Protocol

SEPARATOR = ";"
# version-trace id-parent id-flags, lower-case hex (W3C Trace Context, level 1)
TRACEPARENT = re.compile(r"00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}")


class TraceCarrier(Protocol):
    def current(self) -> str | None:
        """The current span's context as a `traceparent`; None outside any trace."""
        ...

    def entered(self, traceparent: str) -> AbstractContextManager[object]:
        """Make `traceparent` the current context while the block runs."""
        ...


def proposal_id(carrier: TraceCarrier | None) -> str:
    """A new proposal's id: random, with the current trace where there is one."""
    token = secrets.token_hex(8)
    traceparent = carrier.current() if carrier is not None else None
    if traceparent is None or not TRACEPARENT.fullmatch(traceparent):
        return token
    return f"{token}{SEPARATOR}{traceparent}"


def within(carrier: TraceCarrier | None, proposal: str | None) -> AbstractContextManager[object]:
    """The trace `proposal` was made in, entered (nothing when it carries none, or it is not
    a well-formed `traceparent`: a row is data, and a bad one starts no trace of its own)."""
    if carrier is None or proposal is None or SEPARATOR not in proposal:
        return contextlib.nullcontext()
    traceparent = proposal.split(SEPARATOR, 1)[1]
    if not TRACEPARENT.fullmatch(traceparent):
        return contextlib.nullcontext()
    return carrier.entered(traceparent)
