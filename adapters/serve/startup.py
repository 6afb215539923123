"""Start-up and command failures told in one line: the cause, the fix, and the exit status.

Each step of a start that talks to the outside (the database, the listening port, Slack) runs
in a `*_step` context that turns what it raises into a `StartupError`; `explain` gives the line
and status of any failure, which the `hitl-bridge` command prints instead of a traceback (its
`--debug` prints the traceback too). Status 2 is for configuration (a setting or a command
fixes it), 1 for anything else.
"""

from __future__ import annotations

import contextlib
import errno
import socket
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass

from adapters.ops.terminal import safe
from bot import ConfigurationError
from bot.tool_sources.sources import ToolSourceError

CONFIGURATION = 2
FAILED = 1
SLACK_TOKEN_ERRORS = frozenset(
    ("invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired")
)


class StartupError(Exception):
    """A failure whose cause and fix `str(err)` says in one line; `status` is the exit status."""

    def __init__(self, message: str, *, status: int = FAILED) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class Explained:
    line: str  # one line, safe to print
    status: int


def explain(err: BaseException) -> Explained:
    """The one line and exit status for a failure (a traceback is for --debug)."""
    # Imported here, as in each step below: the CLI's every command imports this module.
    from pydantic import ValidationError

    from adapters.serve.settings import settings_problem

    if isinstance(err, StartupError):
        return Explained(safe(err), err.status)
    if isinstance(err, ConfigurationError):
        return Explained(safe(err), CONFIGURATION)
    if isinstance(err, ValidationError):
        return Explained(safe(settings_problem(err)), CONFIGURATION)
    said = _first_line(err)
    return Explained(safe(f"{said} (run with --debug for the traceback)"), FAILED)


@contextlib.contextmanager
def database_step(url: str) -> Iterator[None]:
    """Opening, checking or migrating the database at `url`."""
    try:
        yield
    except (ConfigurationError, StartupError):
        raise
    except Exception as err:
        raise _database_failure(err, url) from err


@contextlib.contextmanager
def listening_step(
    host: str, port: int, host_setting: str = "HITL_HOST", port_setting: str = "HITL_PORT"
) -> Iterator[None]:
    """Listening on HITL_HOST:HITL_PORT (or the settings named: HITL_METRICS_ADDRESS)."""
    try:
        yield
    except OSError as err:
        where = f"{host}:{port}"
        if err.errno == errno.EADDRINUSE:
            raise StartupError(
                f"port {port} on {host} is already in use: stop what listens there "
                f"or set {port_setting} to a free port"
            ) from err
        if err.errno == errno.EACCES:
            raise StartupError(
                f"no permission to listen on {where}: set {port_setting} to a port above 1023",
                status=CONFIGURATION,
            ) from err
        if err.errno == errno.EADDRNOTAVAIL or isinstance(err, socket.gaierror):
            raise StartupError(
                f"cannot listen on {host}: it is not an address of this machine; set "
                f"{host_setting} to one (0.0.0.0 for all, 127.0.0.1 for this machine only)",
                status=CONFIGURATION,
            ) from err
        raise StartupError(f"cannot listen on {where}: {_reason(err)}") from err


@contextlib.contextmanager
def tools_step() -> Iterator[None]:
    """Starting the agent file's tools: an MCP server that cannot start is named, status 1."""
    try:
        yield
    except ToolSourceError as err:
        raise StartupError(str(err)) from err


@contextlib.contextmanager
def slack_step(api_url: str | None, variable: str = "SLACK_BOT_TOKEN") -> Iterator[None]:
    """A first call to Slack's Web API (who the bot is, a Socket Mode connection)."""
    import aiohttp
    from slack_sdk.errors import SlackApiError

    from adapters.surfaces.slack.calls import slack_error

    where = api_url or "https://slack.com/api/"
    try:
        yield
    except SlackApiError as err:
        code = slack_error(err)  # a 5xx with an HTML body has no "error"
        if code in SLACK_TOKEN_ERRORS:
            raise StartupError(
                f"Slack refused {variable} ({code}): set it to the token of the app "
                "installed in your workspace",
                status=CONFIGURATION,
            ) from err
        raise StartupError(f"Slack at {where} answered {code}") from err
    except (TimeoutError, aiohttp.ClientError, OSError) as err:
        raise StartupError(
            f"cannot reach Slack at {where} ({_reason(err)}): check the network, "
            "or SLACK_API_URL if it is set"
        ) from err


def _database_failure(err: Exception, url: str) -> StartupError:
    from adapters.serve.settings import shown_url, sqlite_path

    shown = shown_url(url)
    for cause in _chain(err):
        if _postgres_said(cause, "InvalidCatalogNameError"):
            name = url.rsplit("/", 1)[-1].split("?", 1)[0]
            return StartupError(
                f"the PostgreSQL database in HITL_DATABASE_URL does not exist ({cause}): "
                f"create it (createdb {name}) or set HITL_DATABASE_URL to one that does",
                status=CONFIGURATION,
            )
        if _postgres_said(cause, "InvalidAuthorizationSpecificationError"):
            return StartupError(
                f"PostgreSQL refused the user or password in HITL_DATABASE_URL ({cause}): "
                "fix them in HITL_DATABASE_URL",
                status=CONFIGURATION,
            )
        if isinstance(cause, sqlite3.OperationalError) and "unable to open" in str(cause):
            path = sqlite_path(url)
            return StartupError(
                f"cannot open the SQLite database {path or shown} ({cause}): check that its "
                "directory exists and is writable, or set HITL_DATABASE_URL",
                status=CONFIGURATION,
            )
        if isinstance(cause, OSError):
            return StartupError(
                f"cannot reach the database server of HITL_DATABASE_URL {shown} "
                f"({_reason(cause)}): is it running? check the host and port in it"
            )
        if isinstance(cause, ModuleNotFoundError):
            return StartupError(
                f"no database driver for HITL_DATABASE_URL {shown} ({cause}): use "
                "sqlite+aiosqlite:/// or postgresql+asyncpg://",
                status=CONFIGURATION,
            )
    return StartupError(f"the database at {shown} failed: {_first_line(err)}")


def _postgres_said(err: BaseException, error: str) -> bool:
    """Whether `err` is PostgreSQL's `error` as asyncpg raises it (named here, not imported:
    the database driver is the store's business)."""
    kinds = type(err).__mro__
    return any(k.__name__ == error and k.__module__.startswith("asyncpg") for k in kinds)


def _chain(err: BaseException) -> Iterator[BaseException]:
    """`err` and what caused it, outermost first."""
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _reason(err: BaseException) -> str:
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    return _first_line(err)


def _first_line(err: BaseException) -> str:
    lines = str(err).strip().splitlines()
    return f"{type(err).__name__}: {lines[0]}" if lines else type(err).__name__
