"""Which database errors mean "the database cannot take this call right now" (an outage the
caller reports as unavailable) rather than "this call was wrong"."""

from __future__ import annotations

import asyncpg
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

# SQLSTATE classes and codes of a database that is there but cannot take the call right now:
# connection exceptions, read-only transactions, insufficient resources (disk full, too many
# connections), operator intervention (shutting down), system errors.
_UNAVAILABLE_STATES = ("08", "25006", "53", "57", "58")


def unavailable(err: BaseException) -> bool:
    """Whether `err` says the database cannot be reached or written right now (rather than
    that the call itself was wrong, like a constraint it broke)."""
    if isinstance(err, OSError | OperationalError | InterfaceError):
        return True
    if isinstance(err, DBAPIError):
        if err.connection_invalidated:
            return True
        state = getattr(err.orig, "sqlstate", None) or getattr(err.orig, "pgcode", None)
        return isinstance(state, str) and state.startswith(_UNAVAILABLE_STATES)
    return False


def first_line(err: BaseException) -> str:
    """The driver's message without SQLAlchemy's SQL and parameters."""
    cause = err.orig if isinstance(err, DBAPIError) and err.orig is not None else err
    lines = str(cause).strip().splitlines()
    return lines[0] if lines else type(cause).__name__


def closed_before_sending(err: BaseException) -> bool:
    """Whether `err` is asyncpg refusing to send on a connection it already knew was closed
    (the server ended it while it sat idle in the pool, a restart): nothing of the call was
    committed (a transaction under way dies with its connection), so it may run again on a
    fresh one. A connection lost in the middle of a statement is not this (asyncpg says
    "closed in the middle of operation"): that call's outcome is unknown."""
    if not isinstance(err, DBAPIError) or not err.connection_invalidated or err.orig is None:
        return False
    cause = err.orig.__cause__
    return isinstance(cause, asyncpg.InterfaceError) and "connection is closed" in str(cause)
