"""The `hitl-bridge` command: demo, serve, db, pending."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Sequence

from pydantic import ValidationError

from adapters.settings import Settings
from bot import ConfigurationError
from bot.store import open_store, upgrade


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hitl-bridge", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log at debug level")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="an agent in this terminal, asking you")
    demo.add_argument("--message", help="run one turn with this message, then exit")
    db = commands.add_parser("db", help="database migrations")
    db.add_argument("action", choices=["upgrade"], help="migrate to the newest revision")
    commands.add_parser(
        "serve", help="serve Slack (HTTP or Socket Mode) and/or Teams on HITL_HOST:HITL_PORT"
    )
    commands.add_parser("pending", help="list the requests waiting for an answer")
    audit = commands.add_parser("audit", help="who asked, answered or was refused, newest first")
    audit.add_argument("--request", help="only this request's lines")
    audit.add_argument("--limit", type=int, default=50, help="how many lines (default 50)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    level = logging.DEBUG if args.verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = Settings()
    except ValidationError as err:
        print(f"hitl-bridge: bad configuration:\n{err}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(_run(args, settings))
    except ConfigurationError as err:
        print(f"hitl-bridge: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


async def _run(args: argparse.Namespace, settings: Settings) -> int:
    if args.command == "demo":
        from adapters.console.demo import run_demo
        from adapters.console.surface import StdioTerminal

        return await run_demo(settings, StdioTerminal(), args.message)
    if args.command == "serve":
        from adapters.serve import serve

        return await serve(settings)
    if args.command == "db":
        await upgrade(settings.database_url)
        print(f"database at {settings.database_url} is at the newest revision")
        return 0
    if args.command == "audit":
        return await _print_audit(settings, args.request, args.limit)
    return await _print_pending(settings)


async def _print_pending(settings: Settings) -> int:
    store = await open_store(settings.database_url, migrate=False)
    try:
        for record in await store.list_pending():
            deadline = record.expires_at.isoformat() if record.expires_at else "none"
            who = record.actor_id or "anyone"
            print(f"{record.id}  {record.tool_name:<16} for {who:<12} room {record.room_id}"
                  f"  since {record.created_at.isoformat()}  until {deadline}")  # fmt: skip
    finally:
        await store.close()
    return 0


async def _print_audit(settings: Settings, request_id: str | None, limit: int) -> int:
    store = await open_store(settings.database_url, migrate=False)
    try:
        for entry in await store.list_audit(request_id=request_id, limit=limit):
            detail = json.dumps(entry.detail, ensure_ascii=False) if entry.detail else ""
            print(f"{entry.at.isoformat()}  {entry.action:<22} request {entry.request_id or '-'}"
                  f"  by {entry.actor_id or '-'}  {detail}")  # fmt: skip
    finally:
        await store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
