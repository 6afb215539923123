"""An MCP server's elicitation during a call, asked of the call's actor: a real MCP server, a
real HumanInputHandler, and the Router answering as a surface would (from the request's view).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.config.agent_file import load_agent_file
from bot.errors import ToolFailedError
from bot.human_input import HumanInputHandler, RenderState, RequestUpdate
from bot.human_tools.forms import FieldKind
from bot.requests.kinds import Verb
from bot.requests.router import Interaction, Router, Settled
from bot.requests.view import RequestView, build_view
from bot.tool_sources.elicitation import HumanElicitation
from bot.tool_sources.mcp_tools import McpServerSource
from bot.tool_sources.setup import AgentTools
from bot.tools.context import ToolCallContext, tool_turn_context
from bot.words.tool_names import ELICIT_INPUT
from tests.bot.tool_sources.servers import http, http_server, started, stdio

pytestmark = pytest.mark.subprocess  # the MCP test server runs as a process over stdio

PROTOCOLS = ["auto", "legacy"]
TURN = ToolCallContext(
    room_id="slack:C1:1700000000.000100", channel_id="slack", tool_call_id="toolu_1",
    actor_id="U_ALICE",
)  # fmt: skip
RELEASE = {"name": "Aurora", "replicas": 3, "region": "us", "urgent": True}


class Person:
    """A surface with the actor at it: it draws each elicitation's view and answers through
    the router, as Slack, Teams or the console would."""

    def __init__(self, handler: HumanInputHandler, act: Callable[[Person, RequestView], Any]):
        self.handler = handler
        self.router = Router(store=None, handler_for=lambda _: handler, handlers=(handler,))
        self.act = act
        self.views: list[RequestView] = []
        self.updates: list[RequestUpdate] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        handler.add_observer(self.observe)

    async def observe(self, update: RequestUpdate) -> None:
        self.updates.append(update)
        if update.state is RenderState.EXECUTING and update.tool_name == ELICIT_INPUT:
            view = build_view(update)
            self.views.append(view)
            task = asyncio.create_task(self.act(self, view))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def press(self, view: RequestView, verb: Verb, inputs: dict[str, Any]) -> None:
        interaction = Interaction(view.request_id, "U_ALICE", verb, inputs, surface="test")
        outcome = await self.router.handle(interaction)
        assert isinstance(outcome, Settled), outcome


async def fill_in(person: Person, view: RequestView) -> None:
    """Submit the form as typed on a surface: option values, text for numbers and booleans."""
    (control,) = [c for c in view.controls if c.verb is Verb.SUBMIT]
    assert control.form is not None
    region = next(f for f in control.form.fields if f.name == "region")
    us = next(o.value for o in region.options if o.text == "us")
    inputs = {"name": "Aurora", "replicas": "3", "region": us, "urgent": "yes"}
    await person.press(view, Verb.SUBMIT, inputs)


async def decline(person: Person, view: RequestView) -> None:
    await person.press(view, Verb.DECLINE, {"reason": "not today"})


async def done(person: Person, view: RequestView) -> None:
    await person.press(view, Verb.CONFIRM, {})


async def nothing(person: Person, view: RequestView) -> None:
    return None


async def call(source: McpServerSource, tool: str, **arguments: Any) -> str:
    with tool_turn_context(TURN):
        async with asyncio.timeout(20):
            return await source.call(tool, arguments)


def accepted(values: dict[str, Any]) -> str:
    return f"accept {json.dumps(values, separators=(',', ':'))}"


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_form_elicitation_is_asked_of_the_call_s_actor_and_accepted(
    protocol: str,
) -> None:
    handler = HumanInputHandler()
    person = Person(handler, fill_in)
    elicitation = HumanElicitation(handler, timeout=10)
    async with started(stdio(protocol), elicitation) as source:
        assert await call(source, "ask", service="payments-api") == accepted(RELEASE)
    (view,) = person.views
    assert view.title == "Input needed"
    facts = {fact.label: fact.value for fact in view.facts}
    assert facts[""] == "Details for the release of payments-api?"
    assert facts["Asked by"] == f"ask ({source.server.label})"
    (form,) = [c.form for c in view.controls if c.verb is Verb.SUBMIT]
    assert form is not None
    kinds = {f.name: (f.kind, f.required) for f in form.fields}
    assert kinds == {
        "name": (FieldKind.TEXT, True),
        "replicas": (FieldKind.INTEGER, True),
        "region": (FieldKind.CHOICE, True),
        "urgent": (FieldKind.BOOLEAN, False),  # it has a default
    }
    asked = person.updates[0]
    assert (asked.room_id, asked.actor_id, asked.channel_id) == (
        TURN.room_id, TURN.actor_id, TURN.channel_id,
    )  # fmt: skip
    assert asked.tool_call_id.startswith("toolu_1/elicit-")
    complete = [u for u in person.updates if u.state is RenderState.COMPLETE]
    assert complete and json.loads(complete[0].result or "") == RELEASE


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_declined_elicitation_is_declined(protocol: str) -> None:
    handler = HumanInputHandler()
    Person(handler, decline)
    async with started(stdio(protocol), HumanElicitation(handler, timeout=10)) as source:
        assert await call(source, "ask", service="ledger") == "decline"


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_an_elicitation_nobody_answers_is_cancelled(protocol: str) -> None:
    handler = HumanInputHandler()
    person = Person(handler, nothing)
    async with started(stdio(protocol), HumanElicitation(handler, timeout=0.3)) as source:
        assert await call(source, "ask", service="ledger") == "cancel"
    assert [u.state for u in person.updates][-1] is RenderState.EXPIRED


async def test_a_withdrawn_elicitation_is_cancelled() -> None:
    handler = HumanInputHandler()

    async def withdraw(person: Person, view: RequestView) -> None:
        await handler.close(channel_id=TURN.channel_id)

    Person(handler, withdraw)
    async with started(stdio(), HumanElicitation(handler, timeout=10)) as source:
        assert await call(source, "ask", service="ledger") == "cancel"


async def test_a_2025_elicitation_sent_on_its_own_is_tied_to_the_call_in_flight() -> None:
    handler = HumanInputHandler()
    person = Person(handler, fill_in)
    async with started(stdio("legacy"), HumanElicitation(handler, timeout=10)) as source:
        assert await call(source, "ask_legacy", service="ledger") == accepted(RELEASE)
    assert person.updates[0].actor_id == TURN.actor_id


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_an_elicitation_over_streamable_http(protocol: str) -> None:
    handler = HumanInputHandler()
    Person(handler, fill_in)
    async with (
        http_server() as url,
        started(http(url, protocol), HumanElicitation(handler, timeout=10)) as source,
    ):
        assert await call(source, "ask", service="payments-api") == accepted(RELEASE)


async def test_a_url_elicitation_shows_the_link_with_a_consent_line_and_done() -> None:
    handler = HumanInputHandler()
    person = Person(handler, done)
    async with started(stdio("legacy"), HumanElicitation(handler, timeout=10)) as source:
        assert await call(source, "open_link") == "accept"
    (view,) = person.views
    assert view.title == "Open a link"
    facts = [(fact.label, fact.value) for fact in view.facts]
    assert ("Link", "https://auth.example.com/login?x=1") in facts
    assert any("opens auth.example.com, outside this chat" in value for _, value in facts)
    assert [(c.verb, c.label) for c in view.controls] == [
        (Verb.CONFIRM, "Done"), (Verb.DECLINE, "Decline"),
    ]  # fmt: skip


async def test_without_a_person_to_ask_the_server_is_told_cancel() -> None:
    handler = HumanInputHandler()
    async with started(stdio(), HumanElicitation(handler, timeout=10)) as source:
        async with asyncio.timeout(20):  # a call outside any conversation
            assert await source.call("ask", {"service": "ledger"}) == "cancel"
    assert not handler.pending


async def test_the_ops_example_s_restart_asks_for_a_confirmation() -> None:
    handler = HumanInputHandler()

    async def confirm(person: Person, view: RequestView) -> None:
        inputs = {"confirm": "yes", "reason": "stuck workers"}
        await person.press(view, Verb.SUBMIT, inputs)

    person = Person(handler, confirm)
    config = load_agent_file(Path(__file__).parents[3] / "examples" / "ops" / "agent.yaml")
    tools = AgentTools.from_config(config, elicitation=HumanElicitation(handler, timeout=10))
    await tools.start()
    try:
        with tool_turn_context(TURN):
            result = await tools.call("confirm_restart", {"service": "ledger"})
        assert result == "Restarted ledger (stuck workers)."
    finally:
        await tools.close()
    (view,) = person.views
    assert view.facts[0].value == "Restart ledger? Its requests in flight will be dropped."


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_elicitation_is_declared_in_the_client_s_capabilities(protocol: str) -> None:
    handler = HumanInputHandler()
    async with started(stdio(protocol), HumanElicitation(handler)) as source:
        assert await source.call("can_elicit", {}) == "form,url"
    async with started(stdio(protocol)) as source:  # nobody to ask: not declared
        assert await source.call("can_elicit", {}) == "none"


async def test_a_person_s_time_to_answer_does_not_count_against_the_call_s_timeout() -> None:
    handler = HumanInputHandler()

    async def slowly(person: Person, view: RequestView) -> None:
        await asyncio.sleep(1.0)  # twice the server's whole budget
        await fill_in(person, view)

    Person(handler, slowly)
    elicitation = HumanElicitation(handler, timeout=10)
    async with started(stdio("legacy", call_timeout_seconds=0.5), elicitation) as source:
        # The server's own time (0.2 s) is within its budget; the person's second is not its.
        answer = await call(source, "ask_slowly", service="payments-api", seconds=0.2)
        assert answer == accepted(RELEASE)
        with pytest.raises(ToolFailedError, match=r"within 0\.5 s"):  # its own time is counted
            await call(source, "ask_slowly", service="payments-api", seconds=5)
