"""Remote A2A agents as tools of the bridge's agent (the agent file's `tools: - a2a: {url}`).

Each skill on the agent's AgentCard is a tool `<agent>_<skill>` taking a `message` (and
optional `data`). A call sends one message, the skill's id in its metadata, and follows the
task it starts:

- `completed`: its artifacts are the tool's result (text as it is, data as JSON);
- `input-required`: the turn's person is asked, with a form when the agent's status message
  carries a JSON Schema of an object as a data part, else with its text as a question; the
  answer goes back on the same task (the form's values as a data part, an answer as text);
- `auth-required`: the link in its message is shown with a Done control (as an MCP server's
  URL elicitation is); once done, "done" is sent on the task;
- `failed`, `canceled`, `rejected`, or a person who declines or does not answer: the model
  reads an error, and a task left open is canceled on the agent.

The SDK's client follows the card's transport (JSON-RPC or HTTP+JSON) and streams where the
card says it can.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx
from a2a.client import A2ACardResolver, A2AClientError, Client, ClientConfig, create_client
from a2a.helpers import get_data_parts, get_text_parts, get_url_parts, new_data_part, new_text_part
from a2a.types import (
    AgentCard,
    AgentSkill,
    Artifact,
    CancelTaskRequest,
    Message,
    Role,
    SendMessageRequest,
    StreamResponse,
    TaskState,
)
from pydantic import ValidationError

from bot.config.agent_file import A2aAgentConfig
from bot.errors import ToolCallError, ToolFailedError, ToolRefusedError
from bot.human_tools.elicitation import ElicitInputArgs
from bot.tool_sources.elicitation import ElicitOutcome, HumanElicitation
from bot.tool_sources.sources import ToolSourceError
from bot.tools import AITool
from bot.tools.context import ToolCallContext, current_tool_context

log = logging.getLogger(__name__)

CARD_SECONDS = 30.0  # reading the AgentCard, connecting, writing: not the agent's work
URL = re.compile(r"https?://\S+")

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "description": "What to ask the agent, in words."},
        "data": {"type": "object", "description": "Structured input, if the skill takes any."},
    },
    "required": ["message"],
}

ENDED: dict[int, str] = {
    TaskState.TASK_STATE_FAILED: "failed",
    TaskState.TASK_STATE_CANCELED: "was canceled",
    TaskState.TASK_STATE_REJECTED: "was rejected",
}


@dataclass
class Progress:
    """Where a task stands once a message's stream ends: its state, the agent's latest status
    message, the artifacts so far; `reply` when the agent answered with a message, no task."""

    task_id: str = ""
    context_id: str = ""
    state: int = TaskState.TASK_STATE_UNSPECIFIED
    status: Message | None = None
    artifacts: dict[str, Artifact] = field(default_factory=dict)
    reply: Message | None = None

    def take(self, event: StreamResponse) -> None:
        kind = event.WhichOneof("payload")
        if kind == "message":
            self.reply = event.message
        elif kind == "task":
            task = event.task
            self.task_id, self.context_id = task.id, task.context_id
            self._status(task.status.state, task.status.message, task.status.HasField("message"))
            for artifact in task.artifacts:
                self.artifacts[artifact.artifact_id] = artifact
        elif kind == "status_update":
            update = event.status_update
            self.task_id, self.context_id = update.task_id, update.context_id
            status = update.status
            self._status(status.state, status.message, status.HasField("message"))
        elif kind == "artifact_update":
            self._artifact(event.artifact_update.artifact, event.artifact_update.append)

    def _status(self, state: int, message: Message, present: bool) -> None:
        self.state = state
        self.status = message if present else None

    def _artifact(self, artifact: Artifact, append: bool) -> None:
        known = self.artifacts.get(artifact.artifact_id)
        if append and known is not None:
            known.parts.extend(artifact.parts)
        else:
            self.artifacts[artifact.artifact_id] = artifact


class A2aAgentSource:
    """A remote A2A agent's skills as tools; the turn's person answers what it asks."""

    def __init__(
        self, config: A2aAgentConfig, *, elicitation: HumanElicitation | None = None
    ) -> None:
        self.config = config
        self.elicitation = elicitation
        self._http: httpx.AsyncClient | None = None
        self._client: Client | None = None
        self._skills: dict[str, str] = {}  # tool name -> skill id ("" for a card without)
        self._tools: list[AITool] = []

    @property
    def label(self) -> str:
        return f"A2A agent `{self.config.label}`"

    def tools(self) -> list[AITool]:
        return list(self._tools)

    async def start(self) -> None:
        """Read the AgentCard; ToolSourceError (one line) if it cannot be read."""
        timeout = httpx.Timeout(CARD_SECONDS, read=self.config.call_timeout_seconds)
        self._http = httpx.AsyncClient(headers=self.config.headers, timeout=timeout)
        try:
            card = await A2ACardResolver(self._http, self.config.url).get_agent_card()
            config = ClientConfig(httpx_client=self._http, streaming=True)
            self._client = await create_client(card, config)
        except (A2AClientError, httpx.HTTPError, ValueError) as err:
            await self.close()
            why = _first_line(err)
            raise ToolSourceError(f"{self.label}: its AgentCard could not be read: {why}") from None
        self._tools = [self._tool(card, skill) for skill in card.skills] or [self._whole(card)]

    async def close(self) -> None:
        client, http = self._client, self._http
        self._client = self._http = None
        if client is not None:
            await client.close()
        if http is not None:
            await http.aclose()

    def _tool(self, card: AgentCard, skill: AgentSkill) -> AITool:
        name = _tool_name(f"{self.config.name or card.name}_{skill.id}")
        self._skills[name] = skill.id
        about = skill.description or skill.name
        return AITool(
            name, f"{about} (skill `{skill.id}` of the A2A agent {card.name})", PARAMETERS
        )

    def _whole(self, card: AgentCard) -> AITool:
        name = _tool_name(self.config.name or card.name)
        self._skills[name] = ""
        return AITool(name, f"{card.description} (the A2A agent {card.name})", PARAMETERS)

    # -- a call ------------------------------------------------------------------------------

    async def call(self, name: str, arguments: dict[str, Any]) -> str:
        if name not in self._skills or self._client is None:
            raise ToolFailedError(f"{self.label} offers no tool {name!r} now")
        context = current_tool_context()
        message = _opening(arguments, self._skills[name])
        progress = Progress()
        try:
            while True:
                progress = await self._sent(message)
                if progress.reply is not None:
                    return _result_of([progress.reply.parts], "")
                if progress.state == TaskState.TASK_STATE_COMPLETED:
                    return self._completed(progress)
                message = await self._answered(context, progress)
        except (ToolCallError, asyncio.CancelledError):
            await self._cancel(progress)
            raise

    async def _sent(self, message: Message) -> Progress:
        """Send `message`; follow the task until its stream ends (an end, or an interruption)."""
        assert self._client is not None
        progress = Progress()
        try:
            async with asyncio.timeout(self.config.call_timeout_seconds):
                async for event in self._client.send_message(SendMessageRequest(message=message)):
                    progress.take(event)
        except TimeoutError:
            raise ToolFailedError(
                f"{self.label} did not finish within {self.config.call_timeout_seconds:g} s"
            ) from None
        except (A2AClientError, httpx.HTTPError) as err:
            raise ToolFailedError(
                f"{self.label} could not be reached: {_first_line(err)}"
            ) from None
        return progress

    def _completed(self, progress: Progress) -> str:
        parts = [a.parts for a in progress.artifacts.values()]
        fallback = f"{self.label} completed the task"
        if not parts and progress.status is not None:
            parts = [progress.status.parts]
        return _result_of(parts, fallback)

    async def _answered(self, context: ToolCallContext | None, progress: Progress) -> Message:
        """The person's answer to what the task waits for, as the message that continues it."""
        said = " ".join(get_text_parts(progress.status.parts)) if progress.status else ""
        if progress.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            return self._continuing(progress, await self._input(context, progress, said))
        if progress.state == TaskState.TASK_STATE_AUTH_REQUIRED:
            await self._authorized(context, progress, said)
            return self._continuing(progress, new_text_part("done"))
        if progress.state in ENDED:
            raise ToolFailedError(f"{self.label}'s task {ENDED[progress.state]}: {said or '-'}")
        raise ToolFailedError(f"{self.label}'s stream ended with its task still working")

    async def _input(self, context: ToolCallContext | None, progress: Progress, said: str) -> Any:
        """A form's values (a data part) or an answer (a text part)."""
        schema = _schema_in(progress.status)
        asker = self.config.label
        form = None
        if schema is not None:
            try:
                form = ElicitInputArgs(
                    message=said or f"{asker} asks for input", requested_schema=schema,
                    server=asker,
                )  # fmt: skip
            except ValidationError:
                log.info("%s sent a schema no form can show: asked as a question", self.label)
        if form is not None:
            values = self._accepted(await self._elicitation.ask(context, form), said)
            return new_data_part(values)
        question = said or f"{asker} needs input to go on."
        answer = self._accepted(
            await self._elicitation.ask_question(context, question, asker), said
        )
        return new_text_part(str(answer.get("answer", "")))

    async def _authorized(
        self, context: ToolCallContext | None, progress: Progress, said: str
    ) -> None:
        urls = get_url_parts(progress.status.parts) if progress.status else []
        url = urls[0] if urls else next(iter(URL.findall(said)), None)
        if url is None:
            raise ToolFailedError(f"{self.label} asks for authorization but gives no link")
        link = ElicitInputArgs(
            message=said or f"Authorize {self.config.label}", mode="url", url=url,
            server=self.config.label,
        )  # fmt: skip
        self._accepted(await self._elicitation.ask(context, link), said)

    def _accepted(self, outcome: ElicitOutcome, said: str) -> dict[str, Any]:
        if outcome.action == "decline":
            raise ToolRefusedError(f"The person declined to answer {self.config.label}: {said}")
        if outcome.action == "cancel":
            raise ToolFailedError(f"No one answered {self.config.label}; its task was canceled")
        return outcome.content or {}

    @property
    def _elicitation(self) -> HumanElicitation:
        if self.elicitation is None:
            raise ToolFailedError(f"{self.label} asks a person, and no one can be asked here")
        return self.elicitation

    def _continuing(self, progress: Progress, part: Any) -> Message:
        return Message(
            message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=[part],
            task_id=progress.task_id, context_id=progress.context_id,
        )  # fmt: skip

    async def _cancel(self, progress: Progress) -> None:
        """Cancel a task the call leaves open on the agent (best effort: it is logged)."""
        if not progress.task_id or self._client is None or progress.state in ENDED:
            return
        if progress.state == TaskState.TASK_STATE_COMPLETED:
            return
        try:
            async with asyncio.timeout(CARD_SECONDS):
                await asyncio.shield(
                    self._client.cancel_task(CancelTaskRequest(id=progress.task_id))
                )
        except Exception as err:  # the call's own error is the one to report
            log.warning("could not cancel task %s on %s: %s", progress.task_id, self.label, err)


def _first_line(err: BaseException) -> str:
    """An error as one line (httpx adds a line pointing at MDN)."""
    return (str(err).splitlines() or [type(err).__name__])[0]


def _tool_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", text)[:128] or "a2a_agent"


def _opening(arguments: dict[str, Any], skill: str) -> Message:
    parts = [new_text_part(str(arguments.get("message", "")))]
    if isinstance(arguments.get("data"), dict):
        parts.append(new_data_part(arguments["data"]))
    metadata = {"skill": skill} if skill else None
    return Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=parts, metadata=metadata)


def _schema_in(message: Message | None) -> dict[str, Any] | None:
    """The JSON Schema of an object among a status message's data parts, if one is."""
    for data in get_data_parts(message.parts) if message is not None else []:
        if isinstance(data, dict) and data.get("type") == "object" and "properties" in data:
            return data
    return None


def _result_of(groups: list[Any], fallback: str) -> str:
    """Parts as the model reads them: text as it is, data as JSON, files as their links."""
    lines: list[str] = []
    for parts in groups:
        lines += get_text_parts(parts)
        lines += [json.dumps(d, ensure_ascii=False) for d in get_data_parts(parts)]
        lines += get_url_parts(parts)
    return "\n".join(lines) or fallback
