"""Doors: requests asked from outside the agent loop (the HTTP API, the MCP server).

An agent anywhere, holding a bearer token (bot/doors/tokens.py), asks a person through a door:
`ask(requester, Ask(tool, arguments, to, ...))`. The request it makes is an ordinary one: made
on the bridge's handler (detached: the door, not a waiting tool call, owns it), posted by the
surface of its room, answered through the router by click, modal or reply, expired by the
deadline sweep, audited. A door row beside it keeps who asked (the token's name), the address
as given, the idempotency key and the callback URL.

Every door, and every webhook, tells a request the same way: `RequestBody`, one JSON object.
A token sees its own requests only.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from pydantic import ValidationError

from bot.doors.addresses import Address, Addressee, UnknownAddressError, read_address
from bot.doors.bodies import ANSWERED as ANSWERED
from bot.doors.bodies import SHOWN_STATUS as SHOWN_STATUS
from bot.doors.bodies import STATUS_OF as STATUS_OF
from bot.doors.bodies import RequestBody as RequestBody
from bot.doors.bodies import request_body as request_body
from bot.doors.contracts import GateCall
from bot.doors.long_polls import Gone, LongPolls
from bot.doors.task_lists import TaskQuery
from bot.gates import approvals
from bot.human_input import HumanInputHandler, RenderState, RequestUpdate
from bot.human_tools.tool import HumanTool
from bot.records import Asked, AuditEntry, Origin, RequestRecord, RequestStatus
from bot.words.tool_names import GATE_TOOL

log = logging.getLogger(__name__)

DOOR_CHANNEL = "doors"  # the channel id of every request a door made
MAX_WAIT = 60.0  # seconds a long poll may wait
Find = Callable[[Address], Awaitable[Addressee]]
Bodies = list[RequestBody]
OnSettled = Callable[[RequestBody, "Asked"], Awaitable[None]]


class DoorError(ValueError):
    """A request a door refuses, or cannot find: `str(err)` is one line for the caller.
    `status` is the HTTP status the API answers with; `errors` the invalid fields."""

    def __init__(self, message: str, status: int = 400, errors: Mapping[str, str] = {}):
        super().__init__(message)
        self.status = status
        self.errors = dict(errors)


@dataclass(frozen=True, slots=True)
class Ask:
    """What a caller asks: a human tool's call, addressed."""

    tool: str
    arguments: dict[str, Any]
    to: str
    timeout_seconds: float | None = None
    idempotency_key: str | None = None
    callback_url: str | None = None
    door: str = "api"  # which door asks (`api`, `mcp`, `a2a`): its request.created row says


class DoorStore(Protocol):
    """What doors need of the store (bot/store/doors.py gives it on SqlStore)."""

    async def reserve_door(self, row: Asked) -> Asked: ...

    async def drop_door(self, request_id: str) -> None: ...

    async def door(self, request_id: str) -> tuple[RequestRecord | None, Asked] | None: ...

    async def settled_among(self, request_ids: list[str]) -> list[str]: ...

    async def list_doors(
        self,
        requester: str,
        *,
        status: RequestStatus | None,
        address: str | None,
        since: datetime | None,
        before: str | None,
        limit: int,
    ) -> list[tuple[RequestRecord, Asked]]: ...

    async def list_tasks(
        self, requester: str, query: TaskQuery
    ) -> tuple[list[tuple[RequestRecord, Asked]], int]: ...

    async def append_audit(self, entry: AuditEntry) -> None: ...


class Doors:
    """Ask, read, list and cancel a token's requests (see the module's docstring)."""

    def __init__(
        self,
        handler: HumanInputHandler,
        store: DoorStore,
        tools: Mapping[str, HumanTool],
        find: Find,
        *,
        default_timeout: float = 3600.0,
        max_timeout: float = 7 * 24 * 3600.0,
        polls_per_token: int = 100,
        polls_per_worker: int = 1000,
    ) -> None:
        self.handler = handler
        self.store = store
        self.tools = tools
        self.find = find
        self.default_timeout = default_timeout
        self.max_timeout = max_timeout
        self.polls = LongPolls(store.settled_among, per_token=polls_per_token,
                               per_worker=polls_per_worker)  # fmt: skip
        self._settled_hooks: list[OnSettled] = []
        self._tasks: set[asyncio.Task[None]] = set()
        handler.add_observer(self.observe)

    def on_settled(self, hook: OnSettled) -> None:
        """Call `hook` with a door request's body once it settles on this worker (webhooks)."""
        self._settled_hooks.append(hook)

    async def ask(self, requester: str, ask: Ask) -> tuple[RequestBody, bool]:
        """Make the request (or find the one this token made with the same idempotency key);
        returns its body and whether it is new. DoorError for what cannot be asked."""
        if ask.tool == GATE_TOOL:  # another agent's tool call, to approve, edit or decline
            call = _validated_call(ask.arguments)
            return await self.ask_gate(
                requester,
                call.tool_name,
                call.input,
                ask,
                grant_rule=call.allow,
                description=call.description,
            )
        tool = self.tools.get(ask.tool)
        if tool is None:
            known = ", ".join(sorted([*self.tools, GATE_TOOL]))
            raise DoorError(f"unknown tool '{ask.tool[:60]}': use one of {known}")
        return await self._make(requester, ask, _validated(tool, ask.arguments))

    async def ask_gate(
        self,
        requester: str,
        tool: str,
        arguments: dict[str, Any],
        ask: Ask,
        *,
        grant_rule: str | None = None,
        stop: bool = False,
        description: str | None = None,
    ) -> tuple[RequestBody, bool]:
        """Ask whether a call of another agent's `tool` with `arguments` may run: an approval
        gate's request (Approve / Edit / Decline, bot/gates/approvals.py); `ask.tool` and
        `ask.arguments` are ignored. Its answer is an approvals.Decision. `grant_rule` offers
        "approve and allow" as that agent's own rule for its session (the door tells it),
        `stop` offers "decline and stop" (a decline whose reason says so). `description` is
        what the person reads of the call (by default, who asks to run it)."""
        gate = approvals.request_arguments(
            tool=tool[:200], description=description or f"{requester} asks to run {tool[:200]}.",
            schema=_schema_of(arguments), arguments=arguments, redact=(), grant_seconds=None,
            grant_rule=grant_rule[:200] if grant_rule else None, stop=stop,
        )  # fmt: skip
        return await self._make(requester, replace(ask, tool=GATE_TOOL), gate)

    async def _make(
        self, requester: str, ask: Ask, arguments: dict[str, Any]
    ) -> tuple[RequestBody, bool]:
        timeout = self._timeout(ask.timeout_seconds)
        try:
            address = read_address(ask.to)
            addressee = await self.find(address)
        except UnknownAddressError as err:
            raise DoorError(str(err), errors={"to": str(err)}) from None
        row = Asked(
            request_id=secrets.token_hex(12), requester=requester, address=address.text,
            created_at=datetime.now(UTC), idempotency_key=ask.idempotency_key,
            callback_url=ask.callback_url, body_hash=body_hash(ask, arguments),
        )  # fmt: skip
        kept = await self.store.reserve_door(row)
        if kept.request_id != row.request_id:  # the same key asked before: that request
            if kept.body_hash is not None and kept.body_hash != row.body_hash:
                key = (ask.idempotency_key or "")[:200]
                why = f"'{key}' was used before with a different request body"
                raise DoorError(f"idempotency_key {why}", 409, {"idempotency_key": why})
            return await self.get(requester, kept.request_id), False
        try:
            await self.handler.create_detached(
                ask.tool, arguments, room_id=addressee.room_id, channel_id=DOOR_CHANNEL,
                actor_id=addressee.actor_id, timeout=timeout, request_id=row.request_id,
                origin=Origin(ask.door, requester),
            )  # fmt: skip
        except BaseException:
            await self.store.drop_door(row.request_id)
            raise
        await self.store.append_audit(AuditEntry(
            "door.asked", datetime.now(UTC), row.request_id, None,
            {"requester": requester, "to": address.text, "tool": ask.tool, "door": ask.door},
        ))  # fmt: skip
        return await self.get(requester, row.request_id), True

    async def get(
        self, requester: str, request_id: str, wait: float = 0.0, gone: Gone | None = None
    ) -> RequestBody:
        """The request's body; with `wait`, once it settles or `wait` seconds pass (or its
        caller is `gone`): a long poll, held in `self.polls` (TooManyPolls over its caps)."""
        if wait <= 0:
            return request_body(*await self._own(requester, request_id))
        with self.polls.hold(requester, request_id[:64], gone) as held:  # before the read:
            found = await self._own(requester, request_id)  # a settle then wakes it
            if _pending(found[0]):
                await held.wait(min(wait, MAX_WAIT))
                found = await self._own(requester, request_id)
        return request_body(*found)

    async def list(
        self,
        requester: str,
        *,
        status: str | None = None,
        to: str | None = None,
        since: datetime | None = None,
        before: str | None = None,
        limit: int = 50,
    ) -> list[RequestBody]:
        """The token's requests, newest first; `before` (a request id) pages on."""
        if status is not None and status not in STATUS_OF:
            raise DoorError(f"unknown status '{status[:30]}': use one of {', '.join(STATUS_OF)}")
        try:
            address = read_address(to).text if to else None
        except UnknownAddressError as err:
            raise DoorError(str(err), errors={"to": str(err)}) from None
        rows = await self.store.list_doors(
            requester, status=STATUS_OF[status] if status else None, address=address,
            since=since, before=before, limit=max(1, min(limit, 200)),
        )  # fmt: skip
        return [request_body(record, row) for record, row in rows]

    async def tasks(self, requester: str, query: TaskQuery) -> tuple[Bodies, int]:
        """A page of the token's requests as tasks (bot/doors/task_lists.py), and how many
        match in all."""
        rows, total = await self.store.list_tasks(requester, query)
        return [request_body(record, row) for record, row in rows], total

    async def cancel(self, requester: str, request_id: str) -> RequestBody:
        """Withdraw a pending request (its message says so); a settled one is left as it is."""
        record, _ = await self._own(requester, request_id)
        if _pending(record):
            await self.handler.cancel(request_id, "Cancelled by its requester", by=requester)
        return await self.get(requester, request_id)

    # -- settles ------------------------------------------------------------------------------

    async def observe(self, update: RequestUpdate) -> None:
        """A door request settled here: release it from the handler (nobody waits on it
        there), wake its long polls, and tell the hooks."""
        if update.channel_id != DOOR_CHANNEL or update.state in _OPEN:
            return
        self.handler.release(update.pending_id)
        self.wake_polls(update.pending_id)
        if self._settled_hooks:
            self._spawn(self._run_settled_hooks(update.pending_id))

    def wake_polls(self, request_id: str) -> None:
        """A request settled (here, or on another worker): wake who waits on it here."""
        self.polls.wake(request_id)

    async def _run_settled_hooks(self, request_id: str) -> None:
        found = await self.store.door(request_id)
        if found is None:
            return
        body = request_body(*found)
        for hook in self._settled_hooks:
            try:
                await hook(body, found[1])
            except Exception:
                log.exception("a settled door request's hook failed")

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        await self.polls.close()
        for task in list(self._tasks):
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await task

    # -- helpers -----------------------------------------------------------------------------

    async def _own(self, requester: str, request_id: str) -> tuple[RequestRecord | None, Asked]:
        found = await self.store.door(request_id[:64])
        if found is None or found[1].requester != requester:
            raise DoorError(f"no request {request_id[:64]}", status=404)
        return found

    def _timeout(self, seconds: float | None) -> float:
        if seconds is None:
            return self.default_timeout
        if not 1 <= seconds <= self.max_timeout:
            why = f"must be between 1 and {self.max_timeout:g}"
            raise DoorError(f"timeout_seconds {why}", errors={"timeout_seconds": why})
        return seconds


_OPEN = (RenderState.IN_PROGRESS, RenderState.EXECUTING)


def body_hash(ask: Ask, arguments: Mapping[str, Any]) -> str:
    """The SHA-256 of what `ask` asks (all but its idempotency key), as canonical JSON: the
    same request asked again has the same hash, whatever its keys' order or its spacing."""
    asked = {"tool": ask.tool, "arguments": arguments, "to": ask.to,
             "timeout_seconds": ask.timeout_seconds, "callback_url": ask.callback_url}  # fmt: skip
    canonical = json.dumps(asked, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def _pending(record: RequestRecord | None) -> bool:
    return record is None or record.status is RequestStatus.PENDING


def _validated(tool: HumanTool, arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments as the tool's model reads them (`HumanTool.validated`); DoorError with
    each bad field."""
    try:
        return tool.validated(arguments)
    except ValidationError as err:
        raise _invalid(tool.name, err) from None


def _invalid(tool: str, err: ValidationError) -> DoorError:
    """The DoorError naming each bad field of `tool`'s arguments."""
    errors = {".".join(str(p) for p in e["loc"]) or "arguments": e["msg"] for e in err.errors()}
    listed = "; ".join(f"{k}: {v}" for k, v in errors.items())
    return DoorError(f"invalid arguments for {tool}: {listed}", errors=errors)


def _validated_call(arguments: dict[str, Any]) -> GateCall:
    try:
        return GateCall.model_validate(arguments)
    except ValidationError as err:
        raise _invalid(GATE_TOOL, err) from None


_JSON_TYPES = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"))


def _schema_of(values: Mapping[str, Any]) -> dict[str, Any]:
    """A schema for arguments that came without one: each key typed by its value (an object or
    a list is edited as JSON text), so the Edit form has typed fields."""
    properties: dict[str, Any] = {}
    for key, value in values.items():
        kind = next((name for cls, name in _JSON_TYPES if isinstance(value, cls)), None)
        properties[key] = {"type": kind} if kind else {}
    return {"type": "object", "properties": properties}
