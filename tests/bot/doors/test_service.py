"""bot/doors/service.py on a real store (SQLite; PostgreSQL too when HITL_TEST_POSTGRES_URL is set):
requests asked through a door, answered through the router as a surface would, read back
with long polls, listed, cancelled; and the tokens that ask them (bot/doors/tokens.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from bot.doors.addresses import Address, Addressee, UnknownAddressError
from bot.doors.service import DOOR_CHANNEL, Ask, DoorError, Doors
from bot.doors.tokens import Tokens
from bot.gates.approvals import read_decision
from bot.human_input import HumanInputHandler, RenderState, RequestUpdate
from bot.human_tools.tool import BUILTIN_TOOLS
from bot.records import Asked
from bot.requests.kinds import Verb
from bot.requests.router import Interaction, Router, Settled
from bot.store import SqlStore, open_store
from bot.store.doors import DoorTables
from bot.words.tool_names import GATE_TOOL
from tests.bot.store.conftest import Database, database  # noqa: F401  (the fixture)

APPROVAL = {"action": "Deploy v2", "reason": "Release day"}
WAIT = 5.0


async def find(address: Address) -> Addressee:
    if address.where == "C0NOWHERE":
        raise UnknownAddressError("no Slack channel C0NOWHERE for this app")
    return Addressee(f"slack:{address.where}:{address.thread or ''}", address.user)


@dataclass
class Door:
    doors: Doors
    handler: HumanInputHandler
    router: Router
    store: SqlStore
    shown: list[RequestUpdate] = field(default_factory=list)
    told: list[tuple[dict[str, object], Asked]] = field(default_factory=list)
    was_told: asyncio.Event = field(default_factory=asyncio.Event)

    async def answer(self, request_id: str, verb: Verb, user: str, **inputs: object) -> object:
        return await self.router.handle(Interaction(request_id, user, verb, inputs, surface="test"))

    async def ask(self, who: str = "agent", /, **fields: object) -> dict[str, object]:
        values: dict[str, object] = {"tool": "requestApproval", "arguments": APPROVAL,
                                     "to": "slack:C01/U0ALICE", **fields}  # fmt: skip
        body, _ = await self.doors.ask(who, Ask(**values))  # type: ignore[arg-type]
        return body


@pytest.fixture
async def door(database: Database) -> AsyncIterator[Door]:  # noqa: F811
    store = await open_store(database.url, schema=database.schema)
    handler = HumanInputHandler(store=store)
    tools = dict(BUILTIN_TOOLS)
    router = Router(store=store, handler_for=lambda _: handler, handlers=(handler,), tools=tools)
    doors = Doors(handler, DoorTables(store), tools, find)
    made = Door(doors, handler, router, store)
    handler.add_observer(lambda update: _keep(made.shown, update))

    async def told(body: dict[str, object], asked: Asked) -> None:
        made.told.append((body, asked))
        made.was_told.set()

    doors.on_settled(told)
    yield made
    await doors.close()
    await handler.close()
    await store.close()


async def _keep(shown: list[RequestUpdate], update: RequestUpdate) -> None:
    shown.append(update)


async def test_an_asked_request_is_an_ordinary_one_answered_through_the_router(
    door: Door,
) -> None:
    made = await door.ask(timeout_seconds=600)
    assert made["status"] == "pending" and made["to"] == "slack:C01/U0ALICE"
    (update,) = [u for u in door.shown if u.state is RenderState.EXECUTING]
    assert (update.room_id, update.actor_id, update.channel_id) == (
        "slack:C01:", "U0ALICE", DOOR_CHANNEL,
    )  # fmt: skip
    polled = asyncio.create_task(door.doors.get("agent", str(made["id"]), wait=30))
    async with asyncio.timeout(WAIT):  # until the poll is held
        while door.doors.polls.held() != 1:  # noqa: ASYNC110  (a count, not an event)
            await asyncio.sleep(0.01)
    assert not polled.done()
    assert isinstance(await door.answer(str(made["id"]), Verb.APPROVE, "U0ALICE"), Settled)
    answered = await asyncio.wait_for(polled, WAIT)
    assert answered["status"] == "answered" and answered["answer"] == {"approved": True}
    assert answered["answered_by"] == "U0ALICE"
    # Released from the handler once settled (nobody waits on it there), told to the hooks.
    assert door.handler.release(str(made["id"])) is False  # dropped already
    await asyncio.wait_for(door.was_told.wait(), WAIT)
    ((body, asked),) = door.told
    assert body == answered and asked.requester == "agent"


async def test_an_answer_before_anyone_polls_is_there_when_they_do(door: Door) -> None:
    made = await door.ask()
    await door.answer(str(made["id"]), Verb.DECLINE, "U0ALICE", reason="not today")
    got = await door.doors.get("agent", str(made["id"]), wait=5)
    assert got["status"] == "declined" and got["reason"] == "not today"


async def test_the_same_key_from_the_same_token_is_the_same_request(door: Door) -> None:
    first = await door.ask(idempotency_key="k1")
    again, created = await door.doors.ask("agent", Ask(
        "requestApproval", dict(reversed(APPROVAL.items())), "slack:C01/U0ALICE",
        idempotency_key="k1",
    ))  # fmt: skip
    assert not created and again["id"] == first["id"]  # the same body, its keys in any order
    with pytest.raises(DoorError, match="idempotency_key 'k1' was used before with a differ") as e:
        await door.ask(idempotency_key="k1", to="slack:C01")  # another body: a client's bug
    assert e.value.status == 409 and list(e.value.errors) == ["idempotency_key"]
    racing = await asyncio.gather(*(door.ask(idempotency_key="k2") for _ in range(5)))
    assert len({r["id"] for r in racing}) == 1
    other = await door.ask("another", idempotency_key="k1")  # keys are per token
    assert other["id"] != first["id"]
    executing = [u for u in door.shown if u.state is RenderState.EXECUTING]
    assert len(executing) == 3  # k1, k2 once, and the other token's


async def test_refusals_name_the_field(door: Door) -> None:
    cases: list[tuple[dict[str, object], str]] = [
        ({"tool": "nope"}, "unknown tool 'nope'"),
        ({"arguments": {"reason": "x"}}, "invalid arguments for requestApproval: action"),
        ({"to": "slack:C0NOWHERE"}, "no Slack channel C0NOWHERE"),
        ({"to": "pigeon:x"}, "'pigeon' is not a surface"),
        ({"timeout_seconds": 0.5}, "timeout_seconds must be between 1 and"),
    ]
    for fields, said in cases:
        with pytest.raises(DoorError, match=said) as refused:
            await door.ask(**fields)
        assert refused.value.status == 400
    assert door.shown == []
    assert await door.doors.list("agent") == []  # nothing half-made is left


async def test_a_token_sees_its_own_requests_only(door: Door) -> None:
    made = await door.ask()
    for call in (door.doors.get("other", str(made["id"])),
                 door.doors.cancel("other", str(made["id"]))):  # fmt: skip
        with pytest.raises(DoorError, match="no request") as unknown:
            await call
        assert unknown.value.status == 404
    assert await door.doors.list("other") == []


async def test_cancel_withdraws_a_pending_request(door: Door) -> None:
    made = await door.ask()
    cancelled = await door.doors.cancel("agent", str(made["id"]))
    assert cancelled["status"] == "cancelled" and cancelled["answered_by"] == "agent"
    assert any(u.state is RenderState.CANCELLED for u in door.shown)
    assert await door.doors.cancel("agent", str(made["id"])) == cancelled


async def test_listed_newest_first_filtered_and_paged(door: Door) -> None:
    ids = [str((await door.ask())["id"]) for _ in range(4)]
    await door.ask(to="slack:C02")
    await door.answer(ids[0], Verb.APPROVE, "U0ALICE")
    listed = [r["id"] for r in await door.doors.list("agent", to="slack:C01/U0ALICE")]
    assert listed == ids[::-1]
    page = await door.doors.list("agent", to="slack:C01/U0ALICE", before=ids[2], limit=1)
    assert [r["id"] for r in page] == [ids[1]]
    answered = await door.doors.list("agent", status="answered")
    assert [r["id"] for r in answered] == [ids[0]]


async def test_a_permission_prompt_is_a_gate_with_edit(door: Door) -> None:
    command = {"command": "rm -rf build", "timeout": 30}
    body, _ = await door.doors.ask_gate("claude", "Bash", command, Ask("", {}, "slack:C01"))
    assert body["tool"] == GATE_TOOL
    await door.answer(
        str(body["id"]), Verb.EDIT, "U0ALICE", command="rm -rf build/tmp", timeout="30"
    )
    got = await door.doors.get("claude", str(body["id"]))
    decision = read_decision(got["answer"])
    assert decision.arguments == {"command": "rm -rf build/tmp", "timeout": 30}


async def test_tokens_made_checked_listed_and_revoked(door: Door) -> None:
    tokens = Tokens(DoorTables(door.store))
    plain, token = await tokens.create("ci-agent")
    assert plain.startswith("hitl_") and plain not in repr(token)
    assert (await tokens.check(plain)) == token
    assert await tokens.check(plain + "x") is None and await tokens.check("Bearer") is None
    with pytest.raises(ValueError, match="exists already"):
        await tokens.create("ci-agent")
    with pytest.raises(ValueError, match="a token's name"):
        await tokens.create("no spaces")
    await tokens.revoke("ci-agent", by="cli:ops")
    assert await tokens.check(plain) is None
    with pytest.raises(ValueError, match="revoked already"):
        await tokens.revoke("ci-agent")
    (listed,) = await tokens.list()
    assert listed.revoked_at is not None
    actions = [e.action for e in await door.store.list_audit()]
    assert actions[:2] == ["token.revoked", "token.created"]
