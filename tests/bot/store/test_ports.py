"""The store's ports: each part of the core is typed against the narrow port it uses, declared
beside it; `RequestStore` is exactly their union, and `SqlStore` serves it. Names are checked
here; signatures by mypy, through the functions below (which only type-check)."""

from __future__ import annotations

import inspect
from itertools import combinations

from bot.agent.channel import Transcripts
from bot.audit.refusals import AuditLog
from bot.bridge.ports import RequestStore
from bot.bridge.surfaces import Claims
from bot.durable.inbox import InboxRows
from bot.durable.leases import LeaseRows
from bot.human_input import HoldRows, RequestRows
from bot.store import SqlStore

PORTS: tuple[type, ...] = (
    RequestRows, HoldRows, AuditLog, Transcripts, LeaseRows, InboxRows, Claims,
)  # fmt: skip
# What only the composer calls (the Bridge): other workers' settles heard, the store closed.
COMPOSER_ONLY = {"listen_settled", "close"}


def methods(protocol: type) -> set[str]:
    """The public methods a protocol declares (its own and its protocol bases')."""
    declared = [klass for klass in protocol.__mro__ if klass.__module__.startswith("bot.")]
    return {
        name
        for klass in declared
        for name, value in vars(klass).items()
        if inspect.isfunction(value) and not name.startswith("_")
    }


def test_the_store_is_the_union_of_its_ports() -> None:
    ports = set().union(*(methods(port) for port in PORTS))
    assert methods(RequestStore) == ports | COMPOSER_ONLY


def test_each_method_is_in_one_port() -> None:
    for first, second in combinations(PORTS, 2):
        assert not methods(first) & methods(second), (first.__name__, second.__name__)


def test_the_sql_store_serves_every_method() -> None:
    missing = {name for name in methods(RequestStore) if not hasattr(SqlStore, name)}
    assert not missing


def every_port(
    store: RequestStore,
) -> tuple[RequestRows, HoldRows, AuditLog, Transcripts, LeaseRows, InboxRows, Claims]:
    """mypy: the union serves each port, with the port's signatures."""
    return store, store, store, store, store, store, store


def the_store(store: SqlStore) -> RequestStore:
    """mypy: `SqlStore` is a `RequestStore`."""
    return store
