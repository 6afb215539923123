"""Remote A2A agents as tools: the SDK's client against a small agent the SDK serves on
127.0.0.1 (tests/bot/tool_sources/a2a_agent.py), with a real HumanInputHandler and the Router
answering what the agent asks, as a surface would."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from bot.config.agent_file import A2aAgentConfig, load_agent_file
from bot.errors import ToolFailedError, ToolRefusedError
from bot.human_input import HumanInputHandler, RenderState, RequestUpdate
from bot.human_tools.tool import BUILTIN_TOOLS
from bot.requests.kinds import Verb
from bot.requests.router import Interaction, Router, Settled
from bot.requests.view import RequestView, build_view
from bot.tool_sources.a2a_tools import A2aAgentSource
from bot.tool_sources.elicitation import HumanElicitation
from bot.tool_sources.setup import AgentTools
from bot.tool_sources.sources import ToolSourceError
from bot.tools.context import ToolCallContext, tool_turn_context
from tests.bot.tool_sources.a2a_agent import LOGIN_URL, SKILLS, TOKEN, Heard, a2a_agent

TURN = ToolCallContext(
    room_id="slack:C1:1700000000.000100", channel_id="slack", tool_call_id="toolu_1",
    actor_id="U_ALICE",
)  # fmt: skip
BEARER = {"Authorization": f"Bearer {TOKEN}"}
Act = Callable[["Person", RequestView], Any]


class Person:
    """The turn's actor at a surface: draws each request's view, answers through the router."""

    def __init__(self, handler: HumanInputHandler, act: Act) -> None:
        # As serve has it: the built-in tools are known whatever the agent file offers.
        self.router = Router(
            store=None, handler_for=lambda _: handler, handlers=(handler,), tools=BUILTIN_TOOLS
        )
        self.act = act
        self.views: list[RequestView] = []
        self.asked: list[RequestUpdate] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        handler.add_observer(self.observe)

    async def observe(self, update: RequestUpdate) -> None:
        if update.state is RenderState.EXECUTING:
            self.asked.append(update)
            view = build_view(update, BUILTIN_TOOLS.get(update.tool_name))
            self.views.append(view)
            task = asyncio.create_task(self.act(self, view))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def press(self, view: RequestView, verb: Verb, inputs: dict[str, Any]) -> None:
        interaction = Interaction(view.request_id, "U_ALICE", verb, inputs, surface="test")
        assert isinstance(await self.router.handle(interaction), Settled)


async def answer_eu_west(person: Person, view: RequestView) -> None:
    await person.press(view, Verb.ANSWER, {"answer": "eu-west"})


async def fill_in(person: Person, view: RequestView) -> None:
    (control,) = [c for c in view.controls if c.verb is Verb.SUBMIT]
    assert control.form is not None
    region = next(f for f in control.form.fields if f.name == "region")
    eu = next(o.value for o in region.options if o.text == "eu")
    await person.press(view, Verb.SUBMIT, {"version": "2.1", "region": eu})


async def done(person: Person, view: RequestView) -> None:
    await person.press(view, Verb.CONFIRM, {})


async def decline(person: Person, view: RequestView) -> None:
    await person.press(view, Verb.DECLINE, {"reason": "not now"})


@asynccontextmanager
async def agent_tools(
    act: Act, *, streaming: bool = True, headers: dict[str, str] | None = None
) -> AsyncIterator[tuple[A2aAgentSource, Person, Heard]]:
    handler = HumanInputHandler()
    person = Person(handler, act)
    async with a2a_agent(streaming=streaming) as (url, heard):
        config = A2aAgentConfig(url=url, headers=BEARER if headers is None else headers)
        source = A2aAgentSource(config, elicitation=HumanElicitation(handler, timeout=10))
        await source.start()
        try:
            yield source, person, heard
        finally:
            await source.close()


async def call(source: A2aAgentSource, tool: str, message: str) -> str:
    with tool_turn_context(TURN):
        async with asyncio.timeout(20):
            return await source.call(tool, {"message": message})


async def test_each_skill_is_a_tool_named_for_the_agent() -> None:
    async with agent_tools(done) as (source, _, _):
        tools = {t.name: t for t in source.tools()}
    assert list(tools) == [f"deployer_{s}" for s in SKILLS]
    assert "skill `deploy` of the A2A agent deployer" in tools["deployer_deploy"].description
    assert tools["deployer_deploy"].parameters["required"] == ["message"]


@pytest.mark.parametrize("streaming", [True, False])
async def test_input_required_asks_the_turn_s_person_and_sends_the_answer_back(
    streaming: bool,
) -> None:
    async with agent_tools(answer_eu_west, streaming=streaming) as (source, person, heard):
        assert await call(source, "deployer_deploy", "deploy api") == "deployed api to eu-west"
    (view,) = person.views
    assert view.title == "Question"
    assert [f.value for f in view.facts if f.label == ""] == ["Which region should api go to?"]
    (asked,) = person.asked
    assert (asked.room_id, asked.actor_id) == (TURN.room_id, TURN.actor_id)
    first, answer = heard.messages
    assert dict(first.metadata) == {"skill": "deploy"}
    assert answer.task_id and answer.parts[0].text == "eu-west"


async def test_a_data_schema_is_asked_as_a_form_and_its_values_sent_as_data() -> None:
    async with agent_tools(fill_in) as (source, person, _):
        result = await call(source, "deployer_release", "release payments")
    assert json.loads(result) == {"released": {"version": "2.1", "region": "eu"}}
    (view,) = person.views
    assert view.title == "Input needed"
    (control,) = [c for c in view.controls if c.verb is Verb.SUBMIT]
    assert control.form is not None
    assert {f.name for f in control.form.fields} == {"version", "region"}


async def test_auth_required_shows_the_link_with_done_then_goes_on() -> None:
    async with agent_tools(done) as (source, person, _):
        assert await call(source, "deployer_login", "sign in") == "signed in"
    (view,) = person.views
    assert view.title == "Open a link"
    assert ("Link", LOGIN_URL) in [(f.label, f.value) for f in view.facts]


async def test_a_decline_refuses_the_call_and_cancels_the_remote_task() -> None:
    async with agent_tools(decline) as (source, _, heard):
        with pytest.raises(ToolRefusedError) as refused:
            await call(source, "deployer_deploy", "deploy api")
        assert heard.canceled == list(heard.skills)  # the one task it started
    assert "declined to answer" in refused.value.reason


@pytest.mark.parametrize(
    ("tool", "error"),
    [
        ("deployer_break", "task failed: the cluster is down"),
        ("deployer_refuse", "task was rejected: not allowed on production"),
    ],
)
async def test_a_task_that_fails_or_is_rejected_reaches_the_model_as_an_error(
    tool: str, error: str
) -> None:
    async with agent_tools(done) as (source, person, _):
        with pytest.raises(ToolFailedError) as failed:
            await call(source, tool, "go")
    assert failed.value.reason == f"A2A agent `{source.config.label}`'s {error}"
    assert person.views == []


async def test_a_refused_token_is_one_line_for_the_model() -> None:
    async with agent_tools(done, headers={"Authorization": "Bearer wrong"}) as (source, _, _):
        with pytest.raises(ToolFailedError) as failed:
            await call(source, "deployer_deploy", "deploy api")
    reason = failed.value.reason
    assert reason.startswith(f"A2A agent `{source.config.label}` could not be reached: ")
    assert "401" in reason and "\n" not in reason and "wrong" not in reason


async def test_an_agent_that_cannot_be_reached_does_not_start() -> None:
    async with a2a_agent() as (url, _):
        pass  # served and stopped: nothing listens there now
    source = A2aAgentSource(A2aAgentConfig(url=url))
    with pytest.raises(ToolSourceError, match="its AgentCard could not be read"):
        await source.start()


async def test_the_agent_file_lists_a_remote_agent_whose_skills_may_need_approval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEPLOYER_TOKEN", TOKEN)
    async with a2a_agent() as (url, _):
        path = tmp_path / "agent.yaml"
        path.write_text(
            "system_prompt: ops\n"
            "tools:\n"
            f"  - a2a: {{url: '{url}', headers: {{Authorization: 'Bearer ${{DEPLOYER_TOKEN}}'}}}}\n"
            "    approval: [deployer_deploy]\n"
        )
        tools = AgentTools.from_config(load_agent_file(path))
        await tools.start()
        try:
            assert "deployer_release" in tools.live
            deploy, release = (tools.approval_for(f"deployer_{s}") for s in ("deploy", "release"))
            assert deploy is not None and deploy.needs_approval
            assert release is not None and not release.needs_approval
        finally:
            await tools.close()
