"""A tool's source asks for input during a call (an MCP server's elicitation, a remote A2A
agent's `input-required`): the turn's person is asked with a form, a link or a question.

The MCP client (bot/tool_sources/mcp_tools.py) hands each `elicitation/create` here in protocol-free
terms; this module makes it a request of the `elicitInput` tool for the actor of the call that
raised it, waits, and maps the outcome to the protocol's three actions: an answer is `accept`
(with the form's values), a Decline is `decline`, anything else (the request withdrawn,
expired, undeliverable, or the call cancelled) is `cancel`.

`elicitInput` is a human tool the model is never offered (bot/human_tools/elicitation.py):
only a server's elicitation asks it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from dataclasses import dataclass
from typing import Any, Literal

from bot.errors import HumanInputRejectedError
from bot.human_input import HumanInputHandler
from bot.human_tools.elicitation import ElicitInputArgs
from bot.human_tools.models import AskUserQuestionArgs
from bot.tools.context import ToolCallContext
from bot.words.tool_names import ASK_USER_QUESTION, ELICIT_INPUT

DEFAULT_TIMEOUT_SECONDS = 300.0

Action = Literal["accept", "decline", "cancel"]


@dataclass(frozen=True, slots=True)
class ElicitOutcome:
    """The person's response in the protocol's terms."""

    action: Action
    content: dict[str, Any] | None = None


CANCEL = ElicitOutcome("cancel")
DECLINE = ElicitOutcome("decline")

log = logging.getLogger(__name__)


@dataclass
class HumanElicitation:
    """Asks the actor of a tool call for what an MCP server elicits, through `handler` (the AI
    channel's: its surfaces show the request, its router takes the answer)."""

    handler: HumanInputHandler
    timeout: float = DEFAULT_TIMEOUT_SECONDS

    async def ask(self, context: ToolCallContext | None, request: ElicitInputArgs) -> ElicitOutcome:
        """The person's response; `cancel` when there is no one to ask or no answer came."""
        arguments = request.model_dump(mode="json", exclude_none=True)
        answer = await self._asked(context, ELICIT_INPUT, arguments, request.server)
        if isinstance(answer, ElicitOutcome):
            return answer
        return ElicitOutcome("accept", _values(answer) if request.mode == "form" else None)

    async def ask_question(
        self, context: ToolCallContext | None, question: str, asker: str
    ) -> ElicitOutcome:
        """A question in the words of `asker` (a remote agent), answered in the conversation:
        `accept` with `{"answer": ...}`."""
        arguments = AskUserQuestionArgs(question=question).model_dump(mode="json")
        answer = await self._asked(context, ASK_USER_QUESTION, arguments, asker)
        if isinstance(answer, ElicitOutcome):
            return answer
        # The answer as the person wrote it; through a door, its answer model's JSON.
        return ElicitOutcome("accept", {"answer": _values(answer).get("answer", answer)})

    async def _asked(
        self, context: ToolCallContext | None, tool: str, arguments: dict[str, Any], asker: str
    ) -> str | ElicitOutcome:
        """The answer of the call's actor to a request of `tool`, else decline or cancel."""
        if context is None or not context.room_id:
            log.warning("%s asked for input outside a conversation: cancelled", asker)
            return CANCEL
        try:
            pending = await self.handler.create(
                tool,
                arguments,
                room_id=context.room_id,
                # Its own id: the call's id belongs to the call (a resumed human tool, a gate).
                tool_call_id=f"{context.tool_call_id}/elicit-{secrets.token_hex(4)}",
                channel_id=context.channel_id,
                channel_type=context.channel_type,
                actor_id=context.actor_id,
                timeout=self.timeout,
            )
            return await self.handler.wait(pending.pending_id, timeout=self.timeout)
        except HumanInputRejectedError:
            return DECLINE
        except asyncio.CancelledError:
            raise
        except Exception as err:  # withdrawn, expired, undeliverable: nobody chose
            log.info("input asked by %s ended without an answer: %s", asker, err)
            return CANCEL


def _values(answer: str) -> dict[str, Any]:
    try:
        values = json.loads(answer)
    except ValueError:
        return {}
    return values if isinstance(values, dict) else {}
