"""The database (reachable, at this version's migrations) and what the doctor reads of it:
whether an admin token can sign in to the admin console."""

from __future__ import annotations

from adapters.ops.doctor.results import Result, failed, passed, shown_secret
from adapters.serve.settings import Settings, shown_url, sqlite_path
from adapters.serve.startup import StartupError, database_step

DATABASE = "database"
ADMIN = "admin console"
UPGRADE = "run `hitl-bridge db upgrade`"
ADMIN_FIX = (
    "set HITL_ADMIN_TOKEN (24 characters or more) or run "
    "`hitl-bridge tokens create --name NAME --admin`"
)


async def database(settings: Settings) -> list[Result]:
    """Reachable, and at the newest revision (what `serve` and /readyz require)."""
    from bot.store import head_revision

    url = settings.database_url
    shown = shown_url(url)
    path = sqlite_path(url)
    if path is not None and not path.is_file():  # SQLite would make an empty one
        return [failed(DATABASE, f"no SQLite database at {path}", UPGRADE)]
    try:
        with database_step(url):
            current = await _revision(url)
    except StartupError as err:
        return [failed(DATABASE, str(err), "check HITL_DATABASE_URL and the database server")]
    head = head_revision()
    if current != head:
        return [failed(
            DATABASE,
            f"{shown} is at revision {current or 'none'}, this version needs {head}",
            UPGRADE,
        )]  # fmt: skip
    return [passed(DATABASE, f"{shown} is reachable, at revision {head} (the newest)")]


async def _revision(url: str) -> str | None:
    from bot.store import open_store

    store = await open_store(url, migrate=False)
    try:
        return await store.current_revision()
    finally:
        await store.close()


async def admin_console(settings: Settings) -> list[Result]:
    """Someone can sign in to /admin: HITL_ADMIN_TOKEN, or a live admin token in the store
    (without either the console opens only to this machine, unsigned)."""
    if settings.admin_token is not None:
        shown = shown_secret(settings.admin_token.get_secret_value())
        return [passed(ADMIN, f"HITL_ADMIN_TOKEN is set ({shown})" + _session_key(settings))]
    live = await _has_admin_token(settings.database_url)
    if live is None:
        return [failed(ADMIN, "HITL_ADMIN_TOKEN is unset and the store's admin tokens cannot "
                       "be read (see the database check)", ADMIN_FIX)]  # fmt: skip
    if live:
        return [passed(ADMIN, "an admin token of `tokens create --admin` is live"
                       + _session_key(settings))]  # fmt: skip
    return [failed(
        ADMIN, "no admin token: /admin opens only to this machine, without signing in", ADMIN_FIX
    )]  # fmt: skip


def _session_key(settings: Settings) -> str:
    if settings.admin_session_key is not None:
        return "; HITL_ADMIN_SESSION_KEY is set"
    return "; HITL_ADMIN_SESSION_KEY is unset (set it when several workers serve /admin)"


async def _has_admin_token(url: str) -> bool | None:
    """Whether the store holds a live admin token; None when it cannot be read (the database
    check says why)."""
    from bot.doors.tokens import Tokens
    from bot.store import open_store
    from bot.store.doors import DoorTables

    path = sqlite_path(url)
    if path is not None and not path.is_file():
        return None
    store = await open_store(url, migrate=False)
    try:
        if not await store.schema_revision_ok():
            return None
        return await Tokens(DoorTables(store)).has_admin()
    except Exception:  # unreachable or broken: the database check tells how
        return None
    finally:
        await store.close()
