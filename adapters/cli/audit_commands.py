"""`hitl-bridge audit [list|verify|export]`: the audit log for admins (bot/audit/chain.py,
bot/audit/export.py).

`list` (the default) prints the latest lines, newest first, escaped for the terminal; `verify`
seals and walks the hash chain (exit 1 naming the first bad row); `export` streams every
matching row, oldest first, as CSV or JSON lines to stdout or a file, one page at a time.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from adapters.ops.terminal import safe
from adapters.serve.startup import StartupError
from bot.audit.export import FORMATS, audit_lines, export_audit
from bot.audit.query import AuditFilter, AuditLine, parse_when
from bot.records import AuditEntry

# The store is imported by the commands that run, not with the parser (`--help`).
if TYPE_CHECKING:
    from bot.store import SqlStore

ACTIONS = ("list", "verify", "export")
DETAIL_SHOWN = 160  # characters of a row's detail that `list` prints


def add_audit_parser(commands: Any, common: argparse.ArgumentParser) -> None:
    audit = commands.add_parser(
        "audit", parents=[common],
        help="the audit log: list (default) who asked, answered or was refused; verify its "
             "hash chain; export it",
    )  # fmt: skip
    audit.add_argument("audit_action", nargs="?", choices=ACTIONS, default="list",
                       metavar="|".join(ACTIONS), help="what to do (default: list)")  # fmt: skip
    audit.add_argument("--request", help="only this request's lines")
    audit.add_argument("--limit", type=int, default=50, help="list: how many lines (default 50)")
    when = "ISO 8601 (2026-12-01, 2026-12-01T09:30Z; UTC unless said) or a time ago: 30m, 24h, 7d"
    audit.add_argument("--since", help=f"rows at or after: {when}")
    audit.add_argument("--until", help=f"rows before: {when}")
    audit.add_argument("--actor", help="rows by this person, token or operator id")
    audit.add_argument("--tool", help="rows of requests of this tool")
    audit.add_argument("--room", help="rows of requests in this room")
    audit.add_argument("--status", help="rows of requests whose final status is this (pending, "
                       "resolved, rejected, timed_out, cancelled, undeliverable)")  # fmt: skip
    audit.add_argument("--action", dest="row_action", metavar="ACTION",
                       help="rows of this action (request.resolved) or family (grant)")  # fmt: skip
    audit.add_argument("--format", choices=FORMATS, default="jsonl", help="export: csv or jsonl")
    audit.add_argument("--output", metavar="FILE", help="export: write here, not to stdout")
    audit.add_argument("--grace", type=float, default=300.0, metavar="SECONDS",
                       help="verify: how far back a row may be dated before the row sealed "
                            "before it (default 300)")  # fmt: skip


async def run_audit(store: SqlStore, args: argparse.Namespace, operator: str) -> int:
    from bot.audit.chain import verify_chain

    if args.audit_action == "verify":
        report = await verify_chain(store, grace=timedelta(seconds=args.grace))
        print(safe(report.line()))
        return 0 if report.intact else 1
    wanted = _filter(args)
    if args.audit_action == "export":
        return await _export(store, wanted, args, operator)
    async for line in audit_lines(store, wanted, newest_first=True, limit=args.limit):
        print(list_line(line))
    return 0


def list_line(line: AuditLine) -> str:
    """One row on one line, every value escaped: an id or an answer cannot drive the terminal."""
    detail = json.dumps(line.detail, ensure_ascii=False) if line.detail else ""
    if len(detail) > DETAIL_SHOWN:
        detail = detail[: DETAIL_SHOWN - 1] + "…"
    return (f"{line.at.isoformat()}  {safe(line.action):<22}"
            f" request {safe(line.request_id or '-')}  by {safe(line.actor_id or '-')}"
            f"  {safe(detail)}")  # fmt: skip


def _filter(args: argparse.Namespace) -> AuditFilter:
    try:
        since = parse_when(args.since) if args.since else None
        until = parse_when(args.until) if args.until else None
    except ValueError as err:
        raise StartupError(f"audit: {err}") from None
    return AuditFilter(
        since=since, until=until, actor=args.actor, tool=args.tool, room=args.room,
        status=args.status, action=args.row_action, request_id=args.request,
    )  # fmt: skip


async def _export(
    store: SqlStore, wanted: AuditFilter, args: argparse.Namespace, operator: str
) -> int:
    """Stream the rows out, then audit the export itself (who took what out, how many rows)."""
    from bot.audit.chain import seal_chain

    await seal_chain(store)  # what is exported carries its place in the chain
    if args.output is None:
        count = await export_audit(store, wanted, args.format, sys.stdout.write)
    else:
        with _output(args.output) as out:
            count = await export_audit(store, wanted, args.format, out.write)
        print(f"{count} rows written to {safe(args.output)}", file=sys.stderr)
    shown = {key: _shown(value) for key, value in vars(wanted).items() if value is not None}
    await store.append_audit(AuditEntry(
        "audit.exported", datetime.now(UTC), None, operator,
        {"format": args.format, "rows": count, "filters": shown},
    ))  # fmt: skip
    await seal_chain(store)
    return 0


def _output(path: str) -> TextIO:
    try:
        return Path(path).open("w", encoding="utf-8", newline="")
    except OSError as err:
        raise StartupError(f"audit export: cannot write {path}: {err.strerror}") from None


def _shown(value: object) -> object:
    return value.isoformat() if isinstance(value, datetime) else value
