"""An MCP server asks for input during a tool call: the turn's person is asked with a form.

The MCP client (bot/tools/mcp_tools.py) hands each `elicitation/create` here in protocol-free
terms; this module makes it a request of the `elicitInput` tool for the actor of the call that
raised it, waits, and maps the outcome to the protocol's three actions: an answer is `accept`
(with the form's values), a Decline is `decline`, anything else (the request withdrawn,
expired, undeliverable, or the call cancelled) is `cancel`.

`elicitInput` is a human tool the model is never offered: only a server's elicitation asks it.
How it looks (the message, a form from the server's schema, or a link with a consent line and
a Done control) is its kind in bot/requests/kinds.py.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bot.errors import HumanInputRejectedError
from bot.human_input import HumanInputHandler
from bot.human_tools.tool import HumanTool
from bot.tools.context import ToolCallContext
from bot.words.tool_names import ELICIT_INPUT

DEFAULT_TIMEOUT_SECONDS = 300.0

Action = Literal["accept", "decline", "cancel"]


class ElicitInputArgs(BaseModel):
    """What an elicitation request shows: the server's message and its form or link."""

    model_config = ConfigDict(extra="forbid")

    message: Annotated[str, Field(max_length=4000)]
    mode: Literal["form", "url"] = "form"
    # form mode: a flat JSON object schema of string/number/integer/boolean/enum fields
    requested_schema: dict[str, Any] | None = None
    url: Annotated[str | None, Field(pattern=r"^https?://\S+$")] = None  # url mode
    server: str = ""  # which MCP server asks
    tool: str = ""  # during which of its tools

    @model_validator(mode="after")
    def _fits_mode(self) -> ElicitInputArgs:
        if self.mode == "url" and self.url is None:
            raise ValueError("a url elicitation needs its url")
        if self.mode == "form" and self.requested_schema is None:
            raise ValueError("a form elicitation needs its requested_schema")
        return self


ELICIT_INPUT_TOOL = HumanTool(
    ELICIT_INPUT,
    "A tool's MCP server asks the person for input while the tool runs.",
    ElicitInputArgs,
)


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
        if context is None or not context.room_id:
            log.warning("%s asked for input outside a conversation: cancelled", request.server)
            return CANCEL
        arguments = request.model_dump(mode="json", exclude_none=True)
        try:
            pending = await self.handler.create(
                ELICIT_INPUT,
                arguments,
                room_id=context.room_id,
                # Its own id: the call's id belongs to the call (a resumed human tool, a gate).
                tool_call_id=f"{context.tool_call_id}/elicit-{secrets.token_hex(4)}",
                channel_id=context.channel_id,
                channel_type=context.channel_type,
                actor_id=context.actor_id,
                timeout=self.timeout,
            )
            answer = await self.handler.wait(pending.pending_id, timeout=self.timeout)
        except HumanInputRejectedError:
            return DECLINE
        except asyncio.CancelledError:
            raise
        except Exception as err:  # withdrawn, expired, undeliverable: nobody chose
            log.info("elicitation by %s ended without an answer: %s", request.server, err)
            return CANCEL
        return ElicitOutcome("accept", _values(answer) if request.mode == "form" else None)


def _values(answer: str) -> dict[str, Any]:
    try:
        values = json.loads(answer)
    except ValueError:
        return {}
    return values if isinstance(values, dict) else {}
