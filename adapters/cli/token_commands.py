"""`hitl-bridge tokens create|list|revoke`: the bearer tokens of the doors (bot/doors/tokens.py).

`create` prints the token and its webhook secret once: the store keeps the token's hash only,
and the secret as it is (it must sign callbacks); neither is printed again.
"""

from __future__ import annotations

import argparse

from adapters.ops.terminal import safe
from adapters.serve.startup import StartupError
from bot.doors.tokens import TokenError, Tokens
from bot.records import Token
from bot.store import SqlStore
from bot.store.doors import DoorTables


async def run_tokens(store: SqlStore, args: argparse.Namespace, operator: str) -> int:
    tokens = Tokens(DoorTables(store))
    try:
        if args.action == "create":
            plain, token = await tokens.create(args.name, admin=args.admin)
            kind = "admin token" if token.admin else "token"
            print(f"{kind} {safe(token.name)} created; shown once, keep it secret:")
            print(f"  token:          {plain}")
            print(f"  webhook secret: {token.webhook_secret}")
            print("Send it as `Authorization: Bearer <token>` to /api/v1 and /mcp.")
            if token.admin:
                print("It also signs in to the admin console at /admin.")
        elif args.action == "revoke":
            revoked = await tokens.revoke(args.name, by=operator)
            print(f"revoked {safe(revoked.name)}: its calls are refused from now on")
        else:
            for token in await tokens.list():
                print(token_line(token))
    except TokenError as err:
        raise StartupError(f"tokens {args.action}: {err}") from None
    return 0


def token_line(token: Token) -> str:
    state = f"revoked {token.revoked_at.isoformat()}" if token.revoked_at else "live"
    admin = "  admin" if token.admin else ""
    return f"{safe(token.name):<24} created {token.created_at.isoformat()}  {state}{admin}"
