"""A Core statement compiled once for one driver, run on the raw driver connection.

SQLAlchemy's execution layer costs three to four times what the driver does for the store's
hottest statements (a request's create and settle; bench/store_throughput.py). A `Prepared`
keeps what SQLAlchemy decided once: the SQL text for the driver's parameter style, the order of
its positional parameters, and each value's conversion (the column types' own bind and result
processors, so a row written here reads back through SQLAlchemy unchanged, and the other way
round). Running it is then only the driver's call.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import BindParameter, ClauseElement, ColumnElement, Connection, Dialect, Executable
from sqlalchemy.exc import (
    DataError,
    DBAPIError,
    IntegrityError,
    InterfaceError,
    OperationalError,
    ProgrammingError,
    StatementError,
)
from sqlalchemy.sql.compiler import SQLCompiler

Convert = Callable[[Any], Any]

_REQUIRED = object()  # a parameter the call must give (no value compiled in)


@dataclass(frozen=True, slots=True)
class _Slot:
    key: str  # the name a call's values carry it under
    value: Any  # the compiled-in value, or _REQUIRED
    convert: Convert | None


@dataclass(frozen=True, slots=True)
class Prepared:
    """`sql` with positional parameters, and how a call's values become them."""

    sql: str
    slots: tuple[_Slot, ...]
    columns: tuple[str, ...]  # the names of the columns it returns, in order
    results: tuple[Convert | None, ...]

    @classmethod
    def of(cls, statement: Executable, dialect: Dialect) -> Prepared:
        """Compile `statement` for `dialect`."""
        compiled = cast(ClauseElement, statement).compile(dialect=dialect)
        if not isinstance(compiled, SQLCompiler) or compiled.positiontup is None:
            raise TypeError(f"{dialect.name}: a positional parameter style is needed")
        slots = tuple(_slot(compiled.binds[name], dialect) for name in compiled.positiontup)
        returned = _returned(statement)
        return cls(
            sql=compiled.string,
            slots=slots,
            columns=tuple(
                str(getattr(column, "key", None) or f"column_{n}")
                for n, column in enumerate(returned)
            ),
            results=tuple(
                column.type.dialect_impl(dialect).result_processor(dialect, None)
                for column in returned
            ),
        )

    def args(self, values: Mapping[str, Any]) -> list[Any]:
        """The driver's parameters for a call with `values` (KeyError names one missing); a
        value its type refuses (a naive datetime) is a StatementError, as through SQLAlchemy."""
        out = []
        try:
            for slot in self.slots:
                value = values[slot.key] if slot.value is _REQUIRED else slot.value
                out.append(value if slot.convert is None or value is None else slot.convert(value))
        except (TypeError, ValueError) as err:
            raise StatementError(str(err), self.sql, None, err) from err
        return out

    def row(self, raw: Sequence[Any]) -> dict[str, Any]:
        """A returned row, converted, by column name."""
        return {
            name: value if convert is None or value is None else convert(value)
            for name, convert, value in zip(self.columns, self.results, raw, strict=True)
        }


def _slot(bind: BindParameter[Any], dialect: Dialect) -> _Slot:
    convert = bind.type.dialect_impl(dialect).bind_processor(dialect)
    if bind.required:
        return _Slot(bind.key, _REQUIRED, convert)
    value = bind.effective_value  # compiled in: converted once, here
    return _Slot(bind.key, value if convert is None or value is None else convert(value), None)


def _returned(statement: Executable) -> Sequence[ColumnElement[Any]]:
    """The columns a SELECT selects or a DML statement's RETURNING names ([] for neither)."""
    for name in ("selected_columns", "exported_columns"):  # a SELECT's; an UPDATE's RETURNING
        columns = getattr(statement, name, None)
        if columns is not None:
            return list(columns)
    return []


@functools.lru_cache(maxsize=512)
def prepared(statement: Executable, dialect: Dialect) -> Prepared:
    """`statement` compiled for `dialect`, once per pair. (An INSERT names its values:
    `insert(t).values(a=bindparam("a"), ...)`.)"""
    return Prepared.of(statement, dialect)


class Bound(dict[str, Any]):
    """A call's values with their driver parameters for some statements worked out already,
    in the caller's thread: SQLite's executor thread (which every call waits for) then only runs
    them. (The conversions, JSON and datetime text, were a quarter of its time.)"""

    def __init__(
        self, values: Mapping[str, Any], dialect: Dialect, statements: Sequence[Executable]
    ) -> None:
        super().__init__(values)
        self.args = {
            statement: prepared(statement, dialect).args(values) for statement in statements
        }


def execute(conn: Connection, statement: Executable, values: Mapping[str, Any]) -> sqlite3.Cursor:
    """Run `statement` on the SQLite connection under `conn` (inside its transaction), past
    SQLAlchemy's execution layer; a driver error comes out as SQLAlchemy's."""
    raw = conn.connection.driver_connection
    assert isinstance(raw, sqlite3.Connection)
    ready = prepared(statement, conn.dialect)
    bound = values.args.get(statement) if isinstance(values, Bound) else None
    try:
        return raw.execute(ready.sql, ready.args(values) if bound is None else bound)
    except sqlite3.Error as err:
        raise driver_error(err, ready.sql) from err


def fetch(
    conn: Connection, statement: Executable, values: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """`execute`, and the rows it returned, converted."""
    ready = prepared(statement, conn.dialect)
    return [ready.row(row) for row in execute(conn, statement, values)]


_BY_SQLSTATE: tuple[tuple[tuple[str, ...], type[DBAPIError]], ...] = (
    (("23",), IntegrityError),
    (("08", "53", "57", "58", "25006"), OperationalError),
    (("22",), DataError),
    (("42",), ProgrammingError),
)


def driver_error(err: Exception, sql: str) -> DBAPIError:
    """A driver's error as the SQLAlchemy exception SQLAlchemy itself would have raised: the
    store's callers and its outage rule (bot/store/outages.py) know those."""
    if isinstance(err, sqlite3.Error):
        return cast(DBAPIError, DBAPIError.instance(sql, None, err, sqlite3.Error))
    state = getattr(err, "sqlstate", None) or ""
    for prefixes, kind in _BY_SQLSTATE:
        if state.startswith(prefixes):
            return kind(sql, None, err)
    if not state:  # no SQLSTATE: the client side (a closed connection, a protocol error)
        return InterfaceError(sql, None, err)
    return DBAPIError(sql, None, err)
