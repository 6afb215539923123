"""The `hitl-bridge` command: demo, serve, mcp, hook, db, pending, doctor, audit, grants, tokens.

A failure is one line on stderr naming its cause and its fix, with exit status 2 for
configuration and 1 otherwise (adapters/serve/startup.py); `--debug` adds the traceback. Everything
printed for admins is escaped (adapters/ops/terminal.py): an id or an argument cannot drive the
terminal or forge a line.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import json
import logging
import os
import sys
import traceback
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from adapters.cli.audit_commands import add_audit_parser, run_audit
from adapters.ops.log_format import TEXT, TEXT_LINE, use_log_format
from adapters.ops.terminal import safe
from adapters.serve.startup import CONFIGURATION, StartupError, database_step, explain
from bot import ConfigurationError
from bot.records import Grant, StoreUnavailableError

# Each command imports what it runs in its own branch of `_run`: `--help` and a command that
# never runs an agent or serves do not pay for the SDKs (seconds each; bench/startup.py).
if TYPE_CHECKING:
    from adapters.serve.settings import Settings
    from bot.store import SqlStore

ARGUMENTS_SHOWN = 120  # characters of a pending request's arguments that `pending` prints
OUR_LOGGERS = ("adapters", "bot")  # `serve` logs theirs at HITL_LOG_LEVEL, the rest's warnings
AGENT_HELP = "the agent file: prompt, model, human tools, MCP servers (default HITL_AGENT_FILE)"


class _Parser(argparse.ArgumentParser):
    """A usage error in one line, as every other failure."""

    def error(self, message: str) -> NoReturn:
        self.exit(CONFIGURATION, f"{self.prog}: {message} (see {self.prog} --help)\n")


class _Version(argparse.Action):
    """`--version`: the installed package's, read only when asked (importlib.metadata is not
    free, and `--help` must stay quick)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **_: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print the version and exit")  # fmt: skip

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> NoReturn:
        from importlib.metadata import PackageNotFoundError, version

        try:
            shown = version("hitl-bridge")
        except PackageNotFoundError:  # the sources run without being installed
            shown = "(not installed: no version)"
        print(f"hitl-bridge {shown}")  # on stdout, as argparse's own version action
        parser.exit(0)


def _parser() -> argparse.ArgumentParser:
    # Also after the command (`hitl-bridge serve --debug`); SUPPRESS keeps the one before it.
    common = _Parser(add_help=False)
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                        help="log at debug level")  # fmt: skip
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show the traceback of a failure")  # fmt: skip
    parser = _Parser(prog="hitl-bridge", description=__doc__.split("\n", 1)[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="log at debug level")
    parser.add_argument("--debug", action="store_true", help="show the traceback of a failure")
    parser.add_argument("--version", action=_Version)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    demo = commands.add_parser(
        "demo", parents=[common], help="an agent in this terminal, asking you"
    )
    demo.add_argument("--message", help="run one turn with this message, then exit")
    demo.add_argument("--agent", metavar="FILE", help=AGENT_HELP)
    db = commands.add_parser("db", parents=[common], help="database migrations")
    db.add_argument("action", choices=["upgrade"], help="migrate to the newest revision")
    serve = commands.add_parser(
        "serve", parents=[common],
        help="serve Slack (HTTP or Socket Mode) and/or Teams on HITL_HOST:HITL_PORT",
    )  # fmt: skip
    serve.add_argument("--agent", metavar="FILE", help=AGENT_HELP)
    commands.add_parser("pending", parents=[common], help="list the requests waiting for an answer")
    doctor = commands.add_parser(
        "doctor", parents=[common], help="check this deployment's configuration, a line each"
    )
    doctor.add_argument(
        "--json", action="store_true", help="a JSON list of {check, ok, detail, fix}"
    )
    add_audit_parser(commands, common)
    grants = commands.add_parser(
        "grants", parents=[common], help="tools allowed to run unasked in a conversation"
    )
    grant_actions = grants.add_subparsers(dest="action", required=True, parser_class=_Parser)
    listing = grant_actions.add_parser("list", parents=[common], help="live grants, newest first")
    listing.add_argument("--all", action="store_true", help="also expired and revoked ones")
    revoke = grant_actions.add_parser("revoke", parents=[common], help="revoke a grant now")
    revoke.add_argument("id", help="the grant's id (from `hitl-bridge grants list`)")
    mcp = commands.add_parser(
        "mcp", parents=[common], help="the MCP tools over stdio (a proxy to a running serve)"
    )
    mcp.add_argument("--url", help="the bridge's URL (default HITL_URL)")
    mcp.add_argument("--token", help="a token of `hitl-bridge tokens create` (default HITL_TOKEN;"
                     " preferred: an argument shows in `ps`)")  # fmt: skip
    hook = commands.add_parser(
        "hook", parents=[common], help="Claude Code's hooks, answered by a person through serve"
    )
    events = hook.add_subparsers(dest="event", required=True, parser_class=_Parser)
    pre = events.add_parser(
        "pre-tool-use", parents=[common],
        help="read a PreToolUse hook's JSON on stdin, ask, print the decision",
    )  # fmt: skip
    pre.add_argument(
        "--to",
        metavar="ADDRESS",
        help="who is asked (default HITL_TO, else the bridge's HITL_MCP_DEFAULT_TO)",
    )
    pre.add_argument(
        "--timeout",
        metavar="S",
        type=_seconds,
        default=300.0,
        help="seconds the person has to answer (default 300; then Claude Code asks)",
    )
    pre.add_argument("--url", help="the bridge's URL (default HITL_URL)")
    pre.add_argument("--token", help="a token of `hitl-bridge tokens create` (default HITL_TOKEN)")
    tokens = commands.add_parser(
        "tokens", parents=[common], help="bearer tokens of the HTTP API and the MCP server"
    )
    token_actions = tokens.add_subparsers(dest="action", required=True, parser_class=_Parser)
    create = token_actions.add_parser("create", parents=[common], help="make one, shown once")
    create.add_argument("--name", required=True, help="who uses it (the audit log's requester)")
    create.add_argument("--admin", action="store_true",
                        help="it may also sign in to the admin console (/admin)")  # fmt: skip
    token_actions.add_parser("list", parents=[common], help="every token, live or revoked")
    drop = token_actions.add_parser("revoke", parents=[common], help="refuse it from now on")
    drop.add_argument("name", help="the token's name")
    return parser


def _seconds(text: str) -> float:
    """A --timeout: a number of seconds, at least 1."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text[:40]!r}") from None
    if not 1 <= seconds < float("inf"):
        raise argparse.ArgumentTypeError("at least 1 second")
    return seconds


def _hook(args: argparse.Namespace) -> int:
    """A Claude Code hook: its input read from stdin, its decision printed; 0 whatever
    happened (what went wrong is the decision's reason, and one line on stderr)."""
    from adapters.doors.mcp.hook import pre_tool_use

    output, problem = asyncio.run(pre_tool_use(
        sys.stdin.read(), os.environ, to=args.to, timeout=args.timeout, url=args.url,
        token=args.token,
    ))  # fmt: skip
    if problem:
        print(f"hitl-bridge hook: {problem}", file=sys.stderr)
    print(json.dumps(output, ensure_ascii=False))
    return 0


class _NotOurMistake(logging.Filter):
    """Drops slack-bolt's warning that the token it read from SLACK_BOT_TOKEN is unused: we
    give it a client made with that token on purpose, so every start would print it."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "`token` will be unused" not in record.getMessage()


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    level = logging.DEBUG if args.verbose else logging.WARNING
    logging.basicConfig(level=level, format=TEXT_LINE)
    use_log_format(TEXT)  # escaped lines; HITL_LOG_FORMAT applies once the settings are read
    bolt = logging.getLogger("slack_bolt.AsyncApp")
    if not any(isinstance(f, _NotOurMistake) for f in bolt.filters):
        bolt.addFilter(_NotOurMistake())
    try:
        if args.command == "hook":  # stdout is Claude Code's: the decision, and only it
            return _hook(args)
        if args.command == "mcp":  # stdout is the protocol's: nothing else is printed there
            from adapters.doors.mcp.stdio import proxy_target, run_stdio_proxy

            return asyncio.run(run_stdio_proxy(*proxy_target(args.url, args.token, os.environ)))
        if args.command == "doctor":  # a bad setting is one of its lines, not a stop
            from adapters.cli.doctor_command import doctor

            printed = asyncio.run(doctor(machine=args.json))
            print(printed.text)
            return printed.status
        from adapters.serve.settings import Settings

        settings = Settings()
        use_log_format(settings.log_format)  # HITL_LOG_FORMAT
        return asyncio.run(_run(args, settings))
    except KeyboardInterrupt:
        return 130
    except Exception as err:
        if args.debug:
            traceback.print_exc()
        explained = explain(err)
        print(f"hitl-bridge: {explained.line}", file=sys.stderr)
        return explained.status


async def _run(args: argparse.Namespace, settings: Settings) -> int:
    settings.check_database()
    if getattr(args, "agent", None):
        settings = settings.model_copy(update={"agent_file": Path(args.agent)})
    if args.command == "demo":
        from adapters.surfaces.console.demo import run_demo
        from adapters.surfaces.console.stdio import StdioTerminal

        return await run_demo(settings, StdioTerminal(), args.message)
    if args.command == "serve":
        from adapters.serve.service import serve

        if not args.verbose:  # else everything is logged already
            for ours in OUR_LOGGERS:
                logging.getLogger(ours).setLevel(settings.log_level)
        return await serve(settings)
    if args.command == "db":
        from adapters.serve.settings import shown_url
        from bot.store import upgrade

        with database_step(settings.database_url):
            applied = await upgrade(settings.database_url)
        print(f"database at {safe(shown_url(settings.database_url))}: {_upgraded(applied)}")
        return 0
    if args.command == "audit":
        store = await _migrated_store(settings)
        try:
            return await run_audit(store, args, _operator())
        finally:
            await store.close()
    if args.command == "grants":
        return await _grants(settings, args)
    if args.command == "tokens":
        from adapters.cli.token_commands import run_tokens

        store = await _migrated_store(settings)
        try:
            return await run_tokens(store, args, _operator())
        finally:
            await _sealed_and_closed(store)
    return await _print_pending(settings)


def _upgraded(applied: list[str]) -> str:
    """What `db upgrade` did: the migrations it applied, or that there were none to apply."""
    from bot.store.migrate import head_revision

    if not applied:
        return f"already at {head_revision()}, nothing to apply"
    shown = ", ".join(applied) if len(applied) <= 3 else f"{applied[0]} … {applied[-1]}"
    return f"applied {len(applied)} migration{'s' if len(applied) > 1 else ''}: {shown}"


async def _migrated_store(settings: Settings) -> SqlStore:
    """The store, once it is known to be reachable and migrated (else a one-line failure)."""
    from adapters.serve.settings import shown_url
    from bot.store import open_store

    url = settings.database_url
    store = await open_store(url, migrate=False)
    try:
        with database_step(url):
            if not await store.schema_revision_ok():
                raise ConfigurationError(
                    f"the database at {shown_url(url)} is not migrated to this version: "
                    "run `hitl-bridge db upgrade` first"
                )
    except BaseException:
        await store.close()
        raise
    return store


async def _print_pending(settings: Settings) -> int:
    store = await _migrated_store(settings)
    try:
        for record in await store.list_pending():
            deadline = record.expires_at.isoformat() if record.expires_at else "none"
            who = safe(record.actor_id or "anyone")
            arguments = json.dumps(record.arguments, ensure_ascii=False, separators=(",", ":"))
            if len(arguments) > ARGUMENTS_SHOWN:
                arguments = arguments[: ARGUMENTS_SHOWN - 1] + "…"
            print(f"{safe(record.id)}  {safe(record.tool_name):<16} for {who:<12}"
                  f" room {safe(record.room_id)}  since {record.created_at.isoformat()}"
                  f"  until {deadline}  {safe(arguments)}")  # fmt: skip
    finally:
        await store.close()
    return 0


async def _sealed_and_closed(store: SqlStore) -> None:
    """Close a store this command wrote audit rows with, sealed first (no worker may run)."""
    from bot.audit.chain import seal_chain

    try:
        with contextlib.suppress(StoreUnavailableError):
            await seal_chain(store)
    finally:
        await store.close()


async def _grants(settings: Settings, args: argparse.Namespace) -> int:
    """`grants list [--all]`: one line per grant; `grants revoke ID`: revoked, audited."""
    from bot.gates.grants import GrantError, Grants

    store = await _migrated_store(settings)
    grants = Grants(store)
    try:
        if args.action == "revoke":
            try:
                grant = await grants.revoke(args.id, by=_operator())
            except GrantError as err:
                raise StartupError(f"cannot revoke: {err}") from None
            print(f"revoked {safe(grant.id)}: {safe(grant.tool_name)} for "
                  f"{safe(grant.actor_id or 'anyone')} in room {safe(grant.room_id)}")  # fmt: skip
            return 0
        now = datetime.now(UTC)
        for grant in await grants.list(ended=args.all, limit=1000):
            print(_grant_line(grant, now))
    finally:
        await _sealed_and_closed(store)
    return 0


def _grant_line(grant: Grant, now: datetime) -> str:
    from bot.gates.grants import shown_scope

    scope = shown_scope(grant) or "every call"
    if grant.revoked_at is not None:
        state = f"revoked {grant.revoked_at.isoformat()} by {safe(grant.revoked_by or '-')}"
    elif grant.expires_at <= now:
        state = f"expired {grant.expires_at.isoformat()}"
    else:
        state = f"until {grant.expires_at.isoformat()}"
    who = safe(grant.actor_id or "anyone")
    return (f"{safe(grant.id)}  {safe(grant.tool_name):<16} for {who:<12}"
            f" room {safe(grant.room_id)}  {state}  {safe(scope)}"
            f"  granted by {safe(grant.granted_by or '-')}")  # fmt: skip


def _operator() -> str:
    """Who revokes from a terminal, for the audit log: `cli:<login>`."""
    try:
        return f"cli:{getpass.getuser()}"
    except (OSError, KeyError):
        return "cli"


if __name__ == "__main__":
    sys.exit(main())
