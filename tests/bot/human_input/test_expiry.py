"""A policy's default answer at the deadline (`on_timeout: {answer: ...}`): the request still
expires (TIMED_OUT), carrying the default as its result, never as a person's answer."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from bot.doors.service import request_body
from bot.errors import AnswerInvalidError, ExpiredWithAnswerError
from bot.human_input import (
    HandlerStore,
    HumanInputHandler,
    RenderState,
    RequestRules,
    RequestUpdate,
)
from bot.human_tools.tool import HumanInputToolHandler
from bot.records import Asked, RequestRecord, RequestStatus, Settlement
from bot.requests.view import build_view
from bot.store import SqlStore, open_store
from tests.bot.conftest import watch

TOOL = "requestApproval"
ARGS: dict[str, Any] = {"action": "Delete the cache", "reason": "It is stale"}
DEFAULT = '{"approved": false, "reason": "nobody answered"}'


def defaults(tool_name: str, arguments: dict[str, Any]) -> str | None:
    return DEFAULT if tool_name == TOOL else None


@pytest.fixture
async def handler() -> AsyncIterator[HumanInputHandler]:
    made = HumanInputHandler(rules=RequestRules(expiry_answer=defaults))
    yield made
    await asyncio.wait_for(made.drain(), 2.0)


async def test_at_the_deadline_the_default_applies_and_the_request_expired(
    handler: HumanInputHandler,
) -> None:
    heard: list[RequestUpdate] = []

    async def observe(update: RequestUpdate) -> None:
        heard.append(update)

    handler.add_observer(observe)
    pending = await handler.create(TOOL, ARGS, timeout=0.05)
    with pytest.raises(ExpiredWithAnswerError) as expired:
        await handler.wait(pending.pending_id, timeout=5)
    assert isinstance(expired.value, TimeoutError)  # a plain expiry to whoever knows no more
    assert expired.value.answer == DEFAULT
    request = await handler.request(pending.pending_id)
    assert request is not None
    assert (request.status, request.result, request.settled_by) == (
        RequestStatus.TIMED_OUT, DEFAULT, None,
    )  # fmt: skip
    await handler.drain()
    last = heard[-1]
    assert (last.state, last.result) == (RenderState.EXPIRED, DEFAULT)
    view = build_view(last)
    assert view.status.template == "Expired: the policy's default answer applied."


async def test_an_answered_or_withdrawn_request_is_not_given_the_default(
    handler: HumanInputHandler,
) -> None:
    answered = await handler.create(TOOL, ARGS, timeout=0.05)
    assert handler.resolve(answered.pending_id, '{"approved": true}', by="U0ANN00002")
    assert json.loads(await handler.wait(answered.pending_id)) == {"approved": True}
    withdrawn = await handler.create_detached(TOOL, ARGS, timeout=0.05)
    assert handler.release(withdrawn.pending_id)
    seen = watch(handler)
    await handler.create(TOOL, ARGS, timeout=0.05)  # its deadline is after both others'
    await seen.wait_for(RenderState.EXPIRED)  # so both have passed: timers fire in order
    request = await handler.request(withdrawn.pending_id)
    assert request is not None
    assert (request.status, request.result) == (RequestStatus.CANCELLED, None)


async def test_without_a_default_the_request_expires_unanswered(
    handler: HumanInputHandler,
) -> None:
    pending = await handler.create("AskUserQuestion", {"question": "Colour?"}, timeout=0.05)
    with pytest.raises(TimeoutError) as expired:
        await handler.wait(pending.pending_id, timeout=5)
    assert type(expired.value) is TimeoutError


async def test_a_default_the_tool_cannot_read_expires_it_unanswered_with_a_warning(
    handler: HumanInputHandler, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(arguments: dict[str, Any], answer: str) -> str:
        raise AnswerInvalidError("confirmed: Field required")

    handler.set_answer_validator(TOOL, refuse)
    pending = await handler.create(TOOL, ARGS, timeout=0.05)
    with caplog.at_level(logging.WARNING, "bot.human_input"), pytest.raises(TimeoutError) as err:
        await handler.wait(pending.pending_id, timeout=5)
    assert type(err.value) is TimeoutError
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "default answer" in warnings[0].getMessage()


async def test_the_model_reads_the_default_marked_expired() -> None:
    handler = HumanInputHandler(rules=RequestRules(expiry_answer=defaults))
    human = HumanInputToolHandler.builtin(timeout=0.05, handler=handler)
    result = await asyncio.wait_for(human(TOOL, ARGS), 5)
    assert json.loads(result) == {"approved": False, "reason": "nobody answered", "expired": True}


@pytest.fixture
async def stores(tmp_path: Any) -> AsyncIterator[list[SqlStore]]:
    url = f"sqlite+aiosqlite:///{tmp_path / 'hitl.db'}"
    first = await open_store(url)
    second = await open_store(url, migrate=False)
    yield [first, second]
    await first.close()
    await second.close()


async def test_the_due_sweep_of_another_worker_applies_the_default(
    stores: list[SqlStore],
) -> None:
    """A request whose worker is gone is expired by another's sweep, with the default."""
    sweeper = HumanInputHandler(
        store=stores[1], hold_seconds=0.4, rules=RequestRules(expiry_answer=defaults)
    )
    now = datetime.now(UTC)
    record = RequestRecord(
        id="req-left", tool_name=TOOL, arguments=ARGS, created_at=now,
        expires_at=now + timedelta(seconds=30),
    )  # fmt: skip
    await stores[0].create_request(record)
    await sweeper.expire_record(await stores[1].get_request("req-left") or record)
    await sweeper.drain()
    stored = await stores[0].get_request("req-left")
    assert stored is not None
    assert (stored.status, stored.result, stored.settled_by) == (
        RequestStatus.TIMED_OUT, DEFAULT, None,
    )  # fmt: skip
    row = Asked("req-left", "ci", "slack:U0ANN00002", now)
    body = request_body(stored, row)
    assert body["status"] == "expired"
    assert body["answer"] == {"approved": False, "reason": "nobody answered"}
    assert body["answered_by"] is None


class OnceUnavailable:
    """A store whose first settle fails (a dropped connection), then works: the real store
    behind, a fault in front (the durable sweep must retry as every settle does)."""

    def __init__(self, store: SqlStore) -> None:
        self._store = store
        self.failed = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def settle(self, settlement: Settlement) -> bool:
        if not self.failed:
            self.failed += 1
            raise ConnectionError("the database went away")
        return await self._store.settle(settlement)


async def test_the_sweep_s_expiry_is_retried_as_every_settle_is(
    stores: list[SqlStore],
) -> None:
    """The durable deadline settles through the one settle path: a write that failed once is
    retried, not lost (it used to call the store directly, without the retries)."""
    flaky = OnceUnavailable(stores[1])
    sweeper = HumanInputHandler(store=cast(HandlerStore, flaky), hold_seconds=0.4)
    now = datetime.now(UTC)
    record = RequestRecord(
        id="req-flaky", tool_name=TOOL, arguments=ARGS, created_at=now,
        expires_at=now + timedelta(seconds=30),
    )  # fmt: skip
    await stores[0].create_request(record)
    await sweeper.expire_record(await stores[1].get_request("req-flaky") or record)
    await sweeper.drain()
    stored = await stores[0].get_request("req-flaky")
    assert stored is not None and flaky.failed == 1
    assert stored.status is RequestStatus.TIMED_OUT
