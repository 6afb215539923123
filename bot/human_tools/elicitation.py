"""`elicitInput`: the human tool an MCP server's elicitation asks during a tool call (the model
is never offered it): the server's message and its form or link. The asking is
bot/tool_sources/elicitation.py's; how it looks is its kind in bot/requests/asked_kinds.py."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bot.human_tools.tool import HumanTool
from bot.words.tool_names import ELICIT_INPUT


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
