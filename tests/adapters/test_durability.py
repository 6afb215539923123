"""Durability with real worker processes: restarts lose nothing, several workers share one store.

Every worker is `hitl-bridge serve` in its own process (tests/adapters/workers.py), killed with
SIGKILL (nothing of it runs afterwards: no shutdown, no last write) or stopped with SIGTERM at
the step under test. After each scenario the same things must hold:
- no decision is lost: the answer given (or the expiry) is what the model reads;
- no message is left with live buttons once its request has settled, and each transition is
  one edit of the request's message;
- the run finishes exactly once: the final text is posted once, and the model is handed the
  tool_result of the right tool_use id once (a request cut by the kill is counted apart).

SQLite runs always (one worker at a time: a restart); PostgreSQL with two workers at once runs
when HITL_TEST_POSTGRES_URL names a server, each test in a database of its own.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.records import RequestStatus
from tests.adapters.surfaces.teams import conftest as teams
from tests.adapters.workers import (
    ALICE,
    CHANNEL,
    POSTGRES_URL_ENV,
    STALLS_AFTER_ACK,
    WAIT,
    Cluster,
    Thread,
    Worker,
    cluster,
    eventually,
    has_actions,
    pending,
    postgres_database,
    sent_by,
    tool_results_for,
)
from tests.fakes.anthropic_api import reply_text, reply_tool_use
from tests.fakes.bot_connector import cards_of
from tests.fakes.slack_signing import event_callback, message_event

pytestmark = pytest.mark.subprocess  # `hitl-bridge serve` runs as worker processes

FINAL = "All done, thanks."
APPROVAL = {"action": "Deploy v2", "reason": "Release day"}
ANSWERED = f"Answered by <@{ALICE}>"
SIGTERM_BOUND = 10.0  # the spec: a worker told to stop exits within 10 s


@pytest.fixture
async def sqlite(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with cluster(f"sqlite+aiosqlite:///{tmp_path / 'hitl.db'}", tmp_path) as running:
        yield running


@pytest.fixture
async def postgres(tmp_path: Path) -> AsyncIterator[Cluster]:
    server = os.environ.get(POSTGRES_URL_ENV)
    if not server:
        pytest.skip(f"{POSTGRES_URL_ENV} is not set")
    async with postgres_database(server) as url, cluster(url, tmp_path) as running:
        yield running


# -- the invariants ------------------------------------------------------------------------------


async def finished_once(
    c: Cluster, thread: Thread, tool_use_id: str, *, final: str = FINAL, handed: int = 1
) -> dict[str, Any]:
    """Once the room's run has ended: the final text was posted once, the model was handed the
    result of `tool_use_id` `handed` times (1, plus requests a kill cut short), and no message
    of the thread still has live buttons but a finished stream's Stop (answered "not going on
    any more"). Returns the tool_result the model read last."""
    await eventually(lambda: c.finished(thread.room_id), "the room's run finished")
    assert thread.texts().count(final) == 1, thread.texts()
    results = tool_results_for(c.model, tool_use_id)
    assert len(results) == handed, [i for i, _ in results]
    index, result = results[-1]
    assert index == len(c.model.requests) - 1  # nothing asked the model after the final turn
    for message in thread.bot_messages():  # a streamed reply keeps its Stop button (Slack's)
        assert thread.streamed(message) or not has_actions(message), message
    return result


async def requests_in_room(c: Cluster, thread: Thread) -> list[str]:
    """Ids of the room's requests, from the messages the bot posted (all of them settled)."""
    ids = []
    for message in thread.bot_messages():
        for version in c.slack.edits(CHANNEL, message["ts"]):
            for block in version.get("blocks") or []:
                if block.get("type") == "actions":
                    ids.append(str(block["block_id"]).removeprefix("hitl_actions:"))
    return sorted(set(ids))


async def only_settle(c: Cluster, request_id: str, status: RequestStatus) -> None:
    """The request settled once, to `status`: one transition, one audit row."""
    record = await c.store.get_request(request_id)
    assert record is not None and record.status is status
    assert await c.settle_actions(request_id) == [f"request.{status.value}"]


def transitions(thread: Thread, message: dict[str, Any]) -> list[str]:
    """What each version of a request message showed: preparing, live, or its ending."""
    shown = []
    for version in thread.versions(message):
        if has_actions(version):
            shown.append("live")
        elif "Preparing request" in version["text"]:
            shown.append("preparing")
        else:
            shown.append("ended")
    return shown


# -- SQLite: one worker, restarted -----------------------------------------------------------------


@pytest.mark.parametrize(
    "click_first", [False, True], ids=["adopted-then-clicked", "clicked-then-adopted"]
)
async def test_sqlite_restart_resumes_the_run_and_takes_the_click(
    sqlite: Cluster, click_first: bool
) -> None:
    c = sqlite
    c.model.script(reply_tool_use("requestApproval", APPROVAL, id="toolu_a1"), reply_text(FINAL))
    # The first worker's lease decides when its run may be adopted. When the click is to land
    # first, the lease outlasts any worker's start on a loaded machine, and the test lapses it
    # (time passing, in the row) once the click is in.
    first = await c.start_worker("one", HITL_LEASE_SECONDS=3600 if click_first else 1)
    thread = await c.mention(first, "deploy v2")
    message, record = await thread.posted()
    await c.kill(first)

    second = await c.start_worker("two")
    if click_first:
        assert not await c.owned_by(thread.room_id, second)  # the old lease still holds
        await c.click(second, message, "hitl_approve")
        await thread.settled(message, ANSWERED)
        assert thread.texts() == []  # answered, but the run waits for its lease to lapse
        run = await c.run_of(thread.room_id)
        assert run is not None and run.owner is not None
        await c.store.release_runs(run.owner, datetime.now(UTC))  # the lease lapses
    else:
        await eventually(lambda: c.owned_by(thread.room_id, second), "the run adopted")
        await c.click(second, message, "hitl_approve")
        await thread.settled(message, ANSWERED)

    await thread.reply(FINAL)
    result = await finished_once(c, thread, "toolu_a1")
    assert json.loads(result["content"]) == {"approved": True}
    assert "is_error" not in result
    await only_settle(c, record.id, RequestStatus.RESOLVED)
    assert transitions(thread, message) == ["preparing", "live", "ended"]
    # Resumed from the saved transcript, by the new worker: the same conversation plus the
    # model's tool call, then its result.
    asked, resumed = c.model.requests
    assert [sent_by(asked), sent_by(resumed)] == ["one", "two"]
    assert resumed.body["messages"][:-2] == asked.body["messages"]
    assert resumed.body["messages"][-2]["content"][0]["id"] == "toolu_a1"


async def test_sqlite_kill_after_the_click_before_the_model_answered(sqlite: Cluster) -> None:
    c = sqlite
    held = asyncio.Event()  # never set: the killed worker's model call stays open until cut
    c.model.script(
        reply_tool_use("requestApproval", APPROVAL, id="toolu_b1"),
        reply_text("Never finished.", hold=held),
        reply_text(FINAL),
    )
    first = await c.start_worker("one")
    thread = await c.mention(first, "deploy v2")
    message, record = await thread.posted()
    await c.click(first, message, "hitl_approve")
    await thread.settled(message, ANSWERED)
    await eventually(lambda: len(c.model.requests) == 2, "the answer on its way to the model")
    await c.kill(first)

    await c.start_worker("two")

    await thread.reply(FINAL)
    # Handed twice: to the call the kill cut short, and once more to finish the run.
    result = await finished_once(c, thread, "toolu_b1", handed=2)
    assert json.loads(result["content"]) == {"approved": True}
    assert "Never finished." not in thread.texts()
    cut, resumed = c.model.requests[1:]
    assert [sent_by(cut), sent_by(resumed)] == ["one", "two"]
    assert resumed.body["messages"] == cut.body["messages"]
    await only_settle(c, record.id, RequestStatus.RESOLVED)
    assert transitions(thread, message) == ["preparing", "live", "ended"]


async def test_sqlite_a_click_acked_then_killed_is_applied_on_restart(sqlite: Cluster) -> None:
    """The click is written down before its ack: the worker dies right after the ack, before
    the router saw it, and the restarted worker applies it (the person's answer, the edit)."""
    c = sqlite
    c.model.script(reply_tool_use("requestApproval", APPROVAL, id="toolu_g1"), reply_text(FINAL))
    first = await c.start_worker("one", module=STALLS_AFTER_ACK)
    thread = await c.mention(first, "deploy v2")
    message, record = await thread.posted()
    await c.click(first, message, "hitl_approve")  # acked: 200
    await c.kill(first)
    assert pending(await c.store.get_request(record.id))  # never handled
    assert has_actions(c.slack.message(CHANNEL, message["ts"]))

    await c.start_worker("two")

    await thread.settled(message, ANSWERED)
    await thread.reply(FINAL)
    result = await finished_once(c, thread, "toolu_g1")
    assert json.loads(result["content"]) == {"approved": True}
    await only_settle(c, record.id, RequestStatus.RESOLVED)
    settled = await c.store.get_request(record.id)
    assert settled is not None and settled.settled_by == ALICE
    assert transitions(thread, message) == ["preparing", "live", "ended"]
    assert c.slack.ephemerals == []
    assert [sent_by(r) for r in c.model.requests] == ["one", "two"]


async def test_sqlite_kill_while_the_model_streams_runs_the_turn_again(sqlite: Cluster) -> None:
    c = sqlite
    held = asyncio.Event()
    c.model.script(
        reply_text("Cut short.", hold=held),
        reply_tool_use("requestApproval", APPROVAL, id="toolu_c1"),
        reply_text(FINAL),
    )
    first = await c.start_worker("one")
    thread = await c.mention(first, "deploy v2")
    await eventually(lambda: len(c.model.requests) == 1, "the model streaming")
    await c.kill(first)

    second = await c.start_worker("two")
    message, record = await thread.posted()
    await c.click(second, message, "hitl_approve")

    await thread.reply(FINAL)
    result = await finished_once(c, thread, "toolu_c1")
    assert json.loads(result["content"]) == {"approved": True}
    assert "Cut short." not in thread.texts()
    cut, again = c.model.requests[:2]
    assert [sent_by(cut), sent_by(again)] == ["one", "two"]
    assert again.body["messages"] == cut.body["messages"]  # the same turn, the text once
    assert cut.body["messages"] == [{"role": "user", "content": "deploy v2"}]
    await only_settle(c, record.id, RequestStatus.RESOLVED)


async def test_sqlite_a_deadline_that_passed_while_down_expires_at_start(sqlite: Cluster) -> None:
    c = sqlite
    c.model.script(reply_tool_use("requestApproval", APPROVAL, id="toolu_d1"), reply_text(FINAL))
    first = await c.start_worker("one", HITL_TIMEOUT_SECONDS=5)
    thread = await c.mention(first, "deploy v2")
    message, record = await thread.posted()
    await c.kill(first)
    assert has_actions(c.slack.message(CHANNEL, message["ts"]))  # still open when it died
    assert record.expires_at is not None
    await asyncio.sleep(max((record.expires_at - datetime.now(UTC)).total_seconds(), 0) + 0.2)

    await c.start_worker("two", HITL_TIMEOUT_SECONDS=5)

    # Swept at start-up: timed out before the worker said it was ready, not whenever the
    # resumed run happens to wait on it again.
    swept = await c.store.get_request(record.id)
    assert swept is not None and swept.status is RequestStatus.TIMED_OUT
    expired = await thread.settled(message, "Expired")
    assert not has_actions(expired)
    await thread.reply(FINAL)
    result = await finished_once(c, thread, "toolu_d1")
    assert result["is_error"] is True
    assert "timed out" in json.loads(result["content"])["error"]
    await only_settle(c, record.id, RequestStatus.TIMED_OUT)
    assert transitions(thread, message) == ["preparing", "live", "ended"]


# -- PostgreSQL: two workers at once -------------------------------------------------------------


async def test_pg_a_click_on_the_other_worker_wakes_the_waiter(postgres: Cluster) -> None:
    c = postgres
    c.model.script(reply_tool_use("requestApproval", APPROVAL, id="toolu_e1"), reply_text(FINAL))
    a = await c.start_worker("a")
    b = await c.start_worker("b")
    thread = await c.mention(a, "deploy v2")
    message, record = await thread.posted()

    await c.click(b, message, "hitl_approve")

    await thread.settled(message, ANSWERED)
    await thread.reply(FINAL)
    result = await finished_once(c, thread, "toolu_e1")
    assert json.loads(result["content"]) == {"approved": True}
    # A's waiter woke (through NOTIFY: its own deadline is a minute away) and A went on.
    assert [sent_by(r) for r in c.model.requests] == ["a", "a"]
    await only_settle(c, record.id, RequestStatus.RESOLVED)
    assert transitions(thread, message) == ["preparing", "live", "ended"]
    assert c.slack.ephemerals == []


async def test_pg_a_killed_workers_run_is_adopted_and_finished(postgres: Cluster) -> None:
    c = postgres
    c.model.script(reply_tool_use("requestApproval", APPROVAL, id="toolu_e2"), reply_text(FINAL))
    a = await c.start_worker("a")
    b = await c.start_worker("b")
    thread = await c.mention(a, "deploy v2")
    message, record = await thread.posted()

    await c.kill(a)
    await eventually(lambda: c.owned_by(thread.room_id, b), "B adopting the run")
    assert has_actions(c.slack.message(CHANNEL, message["ts"]))
    await c.click(b, message, "hitl_approve")

    await thread.settled(message, ANSWERED)
    await thread.reply(FINAL)
    result = await finished_once(c, thread, "toolu_e2")
    assert json.loads(result["content"]) == {"approved": True}
    assert [sent_by(r) for r in c.model.requests] == ["a", "b"]
    await only_settle(c, record.id, RequestStatus.RESOLVED)
    assert transitions(thread, message) == ["preparing", "live", "ended"]


async def test_pg_two_workers_and_an_expiry_settle_once(postgres: Cluster) -> None:
    c = postgres
    c.model.script(reply_tool_use("requestApproval", APPROVAL, id="toolu_e3"), reply_text(FINAL))
    a = await c.start_worker("a", HITL_TIMEOUT_SECONDS=4)
    thread = await c.mention(a, "deploy v2")
    message, record = await thread.posted()
    # Started after the request exists, B's deadline scheduler sleeps towards the same deadline
    # as A's timer and scheduler: they race for the expiry.
    await c.start_worker("b", HITL_TIMEOUT_SECONDS=4)

    await thread.settled(message, "Expired")
    await thread.reply(FINAL)
    result = await finished_once(c, thread, "toolu_e3")
    assert result["is_error"] is True
    assert "timed out" in json.loads(result["content"])["error"]
    await only_settle(c, record.id, RequestStatus.TIMED_OUT)
    assert transitions(thread, message) == ["preparing", "live", "ended"]  # one expired edit
    assert [sent_by(r) for r in c.model.requests] == ["a", "a"]


async def test_pg_an_events_api_retry_on_the_other_worker_runs_nothing_twice(
    postgres: Cluster,
) -> None:
    c = postgres
    c.model.script(reply_text("Hello once!"))
    a = await c.start_worker("a")
    b = await c.start_worker("b")
    event, ts = c.mention_event("hi")
    as_mention = event_callback(event)
    as_message = event_callback(message_event(event["text"], user=ALICE, channel=CHANNEL, ts=ts))
    thread = Thread(c, ts)

    # Slack sends one message as app_mention and as message, to whichever worker…
    await asyncio.gather(c.post(a, as_mention), c.post(b, as_message))
    await thread.reply("Hello once!")
    # …and retries each (say its ack was slow), landing on the other worker.
    await asyncio.gather(
        c.post(b, as_mention, retry_num=1, retry_reason="http_timeout"),
        c.post(a, as_message, retry_num=1, retry_reason="http_timeout"),
    )
    # A later turn on each worker: by its reply, deliveries sent before it were handled.
    c.model.script(reply_text("Later A."), reply_text("Later B."))
    later_a = await c.mention(a, "something else")
    await later_a.reply("Later A.")
    later_b = await c.mention(b, "and more")
    await later_b.reply("Later B.")

    assert thread.texts() == ["Hello once!"]
    assert len(c.model.requests) == 3
    assert await c.finished(thread.room_id)


async def test_pg_a_click_delivered_to_both_workers_settles_once(postgres: Cluster) -> None:
    c = postgres
    c.model.script(reply_tool_use("requestApproval", APPROVAL, id="toolu_e4"), reply_text(FINAL))
    a = await c.start_worker("a")
    b = await c.start_worker("b")
    thread = await c.mention(a, "deploy v2")
    message, record = await thread.posted()
    click = c.click_payload(message, "hitl_approve")
    stamp = int(time.time())  # one signed request, delivered twice

    await asyncio.gather(
        c.post(a, click, timestamp=stamp), c.post(b, click, retry_num=1, timestamp=stamp)
    )

    await thread.settled(message, ANSWERED)
    await thread.reply(FINAL)
    await finished_once(c, thread, "toolu_e4")
    await only_settle(c, record.id, RequestStatus.RESOLVED)
    assert transitions(thread, message) == ["preparing", "live", "ended"]
    # Whichever worker wrote it down second recognised the same signed request: it acked it
    # and did nothing more (handled again, it would say "already answered" to the person).
    assert c.slack.ephemerals == []


@pytest.mark.parametrize("restart", [False, True], ids=["other-worker", "restarted"])
async def test_pg_a_click_acked_then_killed_is_applied_once(
    postgres: Cluster, restart: bool
) -> None:
    """A worker dies right after acking a click, before handling it: the other worker (or the
    dead one, restarted; both sweep) applies it, once."""
    c = postgres
    c.model.script(reply_tool_use("requestApproval", APPROVAL, id="toolu_e6"), reply_text(FINAL))
    a = await c.start_worker("a", module=STALLS_AFTER_ACK)
    b = await c.start_worker("b")
    thread = await c.mention(a, "deploy v2")
    message, record = await thread.posted()
    await c.click(a, message, "hitl_approve")
    await c.kill(a)
    assert pending(await c.store.get_request(record.id))
    if restart:
        await c.start_worker("a2")

    await thread.settled(message, ANSWERED)
    await thread.reply(FINAL)
    result = await finished_once(c, thread, "toolu_e6")
    assert json.loads(result["content"]) == {"approved": True}
    await only_settle(c, record.id, RequestStatus.RESOLVED)
    assert transitions(thread, message) == ["preparing", "live", "ended"]
    assert c.slack.ephemerals == []
    asked, resumed = (sent_by(r) for r in c.model.requests)
    assert asked == "a" and resumed in ({"b", "a2"} if restart else {b.name})


async def test_pg_sigterm_leaves_the_request_pending_for_the_other_worker(
    postgres: Cluster,
) -> None:
    c = postgres
    c.model.script(reply_tool_use("requestApproval", APPROVAL, id="toolu_e5"), reply_text(FINAL))
    a = await c.start_worker("a")
    b = await c.start_worker("b")
    thread = await c.mention(a, "deploy v2")
    message, record = await thread.posted()

    assert await c.terminate(a, SIGTERM_BOUND) == 0

    # A's streamed reply is closed, saying the rest follows (not left open for Slack to end)
    (stream,) = [m for m in thread.bot_messages() if thread.streamed(m)]
    assert c.slack.streaming(CHANNEL, stream["ts"]) is False
    assert "stopped here: the rest of the reply follows below" in stream["text"]
    after = await c.store.get_request(record.id)
    assert after is not None and after.status is RequestStatus.PENDING  # not rejected
    assert await c.settle_actions(record.id) == []
    assert has_actions(c.slack.message(CHANNEL, message["ts"]))
    await eventually(lambda: c.owned_by(thread.room_id, b), "B resuming the run")
    await c.click(b, message, "hitl_approve")

    await thread.settled(message, ANSWERED)
    await thread.reply(FINAL)
    result = await finished_once(c, thread, "toolu_e5")
    assert json.loads(result["content"]) == {"approved": True}
    assert [sent_by(r) for r in c.model.requests] == ["a", "b"]
    await only_settle(c, record.id, RequestStatus.RESOLVED)
    assert transitions(thread, message) == ["preparing", "live", "ended"]


async def test_sqlite_kill_while_the_final_reply_is_being_posted(sqlite: Cluster) -> None:
    """The final words are saved before they are posted: a worker that dies in between (here
    while Slack holds the append that streams them) must not take them with it. The worker
    that adopts the run posts them whole; the dead worker's stream is left as Slack leaves it."""
    c = sqlite
    c.model.script(reply_tool_use("requestApproval", APPROVAL, id="toolu_f1"), reply_text(FINAL))
    first = await c.start_worker("one")
    thread = await c.mention(first, "deploy v2")
    message, record = await thread.posted()
    final_words = c.slack.hold("chat.appendStream", lambda args: FINAL in json.dumps(args))
    await c.click(first, message, "hitl_approve")
    await thread.settled(message, ANSWERED)
    await c.slack.wait_for(lambda: c.slack.held, WAIT)  # the final words on their way
    await c.kill(first)
    final_words.set()  # answered to a worker that is gone
    assert thread.texts() == []

    await c.start_worker("two")

    await thread.reply(FINAL)
    result = await finished_once(c, thread, "toolu_f1")
    assert json.loads(result["content"]) == {"approved": True}
    assert len(c.model.requests) == 2  # the model was not asked again: its answer was saved
    await only_settle(c, record.id, RequestStatus.RESOLVED)


# -- Teams: a run resumed after a restart speaks in its conversation ------------------------------


@dataclass
class TeamsChat:
    """A Teams personal chat with the bot, served by the cluster's workers."""

    cluster: Cluster
    conversation_id: str = teams.PERSONAL

    @property
    def room_id(self) -> str:
        return f"teams:{self.conversation_id}"

    def cards(self, activity_id: str) -> list[dict[str, Any]]:
        """Every card an activity showed, oldest first."""
        versions = self.cluster.connector.versions(self.conversation_id, activity_id)
        return [card for version in versions for card in cards_of(version)]

    def texts(self) -> list[str]:
        """The bot's plain replies, oldest first."""
        activities = self.cluster.connector.activities(self.conversation_id)
        return [a["text"] for a in activities if not cards_of(a) and a.get("text")]

    async def say(self, worker: Worker, text: str) -> None:
        url = self.cluster.connector.service_url
        await self.cluster.post_activity(worker, teams.message_activity(url, text))

    async def posted(self) -> tuple[str, str]:
        """(activity id, request id) of the request card once it is live (it has a refresh
        clause) and recorded in the store (what another worker needs to update it)."""

        def live() -> tuple[str, str] | None:
            for activity in self.cluster.connector.activities(self.conversation_id):
                for card in self.cards(activity["id"]):
                    if card.get("refresh"):
                        return activity["id"], teams.request_id_of(card)
            return None

        found = await self.cluster.connector.wait_for(live, WAIT)
        assert found is not None
        activity_id, request_id = found

        async def recorded() -> bool:
            record = await self.cluster.store.get_request(request_id)
            return record is not None and "teams" in record.message_refs

        await eventually(recorded, f"the card of {request_id} recorded")
        return activity_id, request_id

    async def invoke(self, worker: Worker, verb: str, request_id: str) -> dict[str, Any]:
        activity = teams.invoke_activity(self.cluster.connector.service_url, verb, request_id)
        body: dict[str, Any] = await self.cluster.post_activity(worker, activity)
        return body

    async def settled(self, activity_id: str, marker: str) -> dict[str, Any]:
        """The card once updated to a state without a refresh clause that says `marker`."""

        def done() -> dict[str, Any]:
            card = self.cards(activity_id)[-1]
            return {} if card.get("refresh") or marker not in json.dumps(card) else card

        return await self.cluster.connector.wait_for(done, WAIT)

    async def reply(self, text: str) -> None:
        await self.cluster.connector.wait_for(lambda: text in self.texts(), WAIT)


TEAMS: dict[str, Any] = {"HITL_TEAMS_ALLOW_UNAUTHENTICATED": 1}


@pytest.fixture
def teams_cards_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """FakeBotConnector checks every card against the Adaptive Card 1.5 schema."""
    monkeypatch.setenv("HITL_TEAMS_SCHEMA_DIR", str(teams.SCHEMAS))


@pytest.mark.usefixtures("teams_cards_checked")
@pytest.mark.parametrize("ending", ["approved", "expired"])
async def test_teams_run_resumed_after_a_kill_posts_its_reply(sqlite: Cluster, ending: str) -> None:
    """Teams' side of the restart: the card is updated and the resumed run's words reach the
    conversation, whether a click tells the new worker where the conversation is or nothing
    from Teams reaches it at all (an expiry: it finds the way from the stored card)."""
    c = sqlite
    c.model.script(reply_tool_use("requestApproval", APPROVAL, id="toolu_t1"), reply_text(FINAL))
    timeout = 3 if ending == "expired" else 60
    first = await c.start_worker("one", HITL_TIMEOUT_SECONDS=timeout, **TEAMS)
    chat = TeamsChat(c)
    await chat.say(first, "deploy v2")
    activity_id, request_id = await chat.posted()
    await c.kill(first)

    second = await c.start_worker("two", **TEAMS)
    if ending == "approved":
        await eventually(lambda: c.owned_by(chat.room_id, second), "the run adopted")
        reply = await chat.invoke(second, "hitl_approve", request_id)
        assert reply["statusCode"] == 200 and "Answered by" in json.dumps(reply["value"])
        settled = await chat.settled(activity_id, "Answered by")
    else:
        settled = await chat.settled(activity_id, "Expired")
    assert not teams.is_live(settled)

    await chat.reply(FINAL)
    await eventually(lambda: c.finished(chat.room_id), "the room's run finished")
    assert chat.texts() == [FINAL]  # posted once, by the worker that resumed the run
    results = tool_results_for(c.model, "toolu_t1")
    assert len(results) == 1
    content = json.loads(results[0][1]["content"])
    if ending == "approved":
        assert content == {"approved": True}
        await only_settle(c, request_id, RequestStatus.RESOLVED)
    else:
        assert "timed out" in content["error"]
        await only_settle(c, request_id, RequestStatus.TIMED_OUT)
    assert [sent_by(r) for r in c.model.requests] == ["one", "two"]
    # One card, updated in place: preparing, live, then its ending.
    assert len(chat.cards(activity_id)) == 3
