"""The model behind an agent: the Anthropic Messages API, streamed (the only module importing
anthropic). A reply counts only once its `message_stop` has arrived.

The SDK is imported when an `AnthropicAIProvider` is made, not with this module: it costs
seconds, and most commands (and the scripted model) never call the API.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from bot.tools import AITool

if TYPE_CHECKING:
    import anthropic

log = logging.getLogger(__name__)

ToolStartCallback = Callable[[str, str], None]
"""(tool name, tool_use id): told as soon as a tool_use block starts streaming."""
TextDeltaCallback = Callable[[str], None]
"""A piece of the reply's text, told as it streams in (it must return at once)."""
TextCallback = Callable[[str], Awaitable[None]]

TEXT_JOIN = "\n"  # between two text blocks of one reply, as told and as posted
INTERRUPTED = "The agent's reply was interrupted."
"""Told to the person when the model's reply was cut short twice and nothing of it was used."""


class ReplyInterruptedError(Exception):
    """The model's reply ended before its `message_stop`: incomplete, so nothing of it is used
    (not its text, not a tool call whose input looks complete)."""


@dataclass(frozen=True, slots=True)
class AssistantTurn:
    """One model response: its content blocks as the API takes them back, and why it stopped."""

    content: list[dict[str, Any]]
    stop_reason: str | None

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return [block for block in self.content if block.get("type") == "tool_use"]

    @property
    def text(self) -> str:
        texts = (b.get("text", "") for b in self.content if b.get("type") == "text")
        return TEXT_JOIN.join(t for t in texts if t)


class AIProvider(Protocol):
    """Produces the model's next turn for a transcript and the tools offered."""

    async def generate(
        self,
        *,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[AITool],
        on_tool_start: ToolStartCallback,
        on_text_delta: TextDeltaCallback | None = None,
    ) -> AssistantTurn:
        """The next turn, complete; ReplyInterruptedError if the reply was cut short.
        `on_text_delta` is told the reply's text piece by piece as it is written."""
        ...


class AnthropicAIProvider:
    """The Anthropic Messages API through the official SDK, streamed."""

    def __init__(
        self,
        model: str = "claude-sonnet-5-5",
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        max_tokens: int = 4096,
        max_retries: int = 2,
        client: anthropic.AsyncAnthropic | None = None,
    ) -> None:
        import anthropic  # seconds to import: only when the API is used

        self.model = model
        self.max_tokens = max_tokens
        self._client = client or anthropic.AsyncAnthropic(
            api_key=api_key, base_url=base_url, max_retries=max_retries
        )

    async def generate(
        self,
        *,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[AITool],
        on_tool_start: ToolStartCallback,
        on_text_delta: TextDeltaCallback | None = None,
    ) -> AssistantTurn:
        # The anthropic SDK's HTTP client (loaded with it): a connection dropped mid-stream
        # raises its errors.
        import anthropic
        import httpx2

        offered: Any = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in tools
        ]
        extra: dict[str, Any] = {"system": system} if system else {}
        async with self._client.messages.stream(
            model=self.model,
            max_tokens=self.max_tokens,
            messages=messages,  # type: ignore[arg-type]
            tools=offered,
            **extra,
        ) as stream:
            # Only `message_stop` completes a reply: a stream that ends before it (cleanly or
            # not) may hold a tool call whose input merely looks complete.
            stopped, told = False, _Told(on_text_delta)
            try:
                async for event in stream:
                    if event.type == "message_stop":
                        stopped = True
                    elif event.type == "content_block_start":
                        block = event.content_block
                        if block.type == "tool_use":
                            on_tool_start(block.name, block.id)
                        told.block_started()
                    elif event.type == "content_block_delta":
                        told.delta(event.delta)
            # Older SDKs let the HTTP client's error through; 2.17 and newer wrap a failed
            # read of the body as an APIConnectionError (the request itself was sent above).
            except (httpx2.TransportError, anthropic.APIConnectionError) as err:
                raise ReplyInterruptedError(f"{type(err).__name__}: {err}") from err
            if not stopped:
                raise ReplyInterruptedError("the stream ended before message_stop")
            message = await stream.get_final_message()
        content = [block.model_dump(mode="json", exclude_none=True) for block in message.content]
        return AssistantTurn(content=content, stop_reason=message.stop_reason)

    async def close(self) -> None:
        await self._client.close()


class _Told:
    """The reply's text told as it streams, as `AssistantTurn.text` joins it: a text block
    after another starts with `TEXT_JOIN`. Told without it, two blocks read as one text that
    the complete reply does not start with, and a surface that shows only what it has not
    shown yet showed the whole reply a second time."""

    def __init__(self, tell: TextDeltaCallback | None) -> None:
        self.tell = tell
        self.said = False  # some text was told
        self.new_block = False  # a block started since the last text told

    def block_started(self) -> None:
        self.new_block = True

    def delta(self, delta: Any) -> None:
        """A streamed delta's text, if it is text (not a tool call's input, not thinking)."""
        if self.tell is None or delta.type != "text_delta" or not delta.text:
            return
        if self.new_block and self.said:
            self.tell(TEXT_JOIN)
        self.new_block, self.said = False, True
        self.tell(delta.text)


ModelTrouble = Literal["key", "model", "unreachable", "other"]


class ModelRefusedError(Exception):
    """The Anthropic API would not serve the model; `trouble` says what is to blame (the key,
    the model's name, the way to the API, something else), `str(err)` what it said."""

    def __init__(self, trouble: ModelTrouble, said: str) -> None:
        super().__init__(said)
        self.trouble = trouble


async def probe_model(
    model: str, *, api_key: str, base_url: str | None = None, timeout: float = 10.0
) -> str:
    """The model's display name, asked of the API with the key (`GET /v1/models/{model}`: no
    token is spent); ModelRefusedError if the key is refused, the model unknown or the API
    out of reach. For `hitl-bridge doctor`."""
    import anthropic

    client = anthropic.AsyncAnthropic(
        api_key=api_key, base_url=base_url, max_retries=1, timeout=timeout
    )
    try:
        info = await client.models.retrieve(model)
    except (anthropic.AuthenticationError, anthropic.PermissionDeniedError) as err:
        raise ModelRefusedError("key", _said(err)) from None
    except anthropic.NotFoundError as err:
        raise ModelRefusedError("model", _said(err)) from None
    except anthropic.APIConnectionError as err:  # a timeout too
        raise ModelRefusedError("unreachable", f"{type(err).__name__}: {err}") from None
    except anthropic.APIStatusError as err:
        raise ModelRefusedError("other", _said(err)) from None
    finally:
        await client.close()
    return info.display_name or info.id


def _said(err: anthropic.APIStatusError) -> str:
    """The HTTP status and the error's message, as the API wrote it."""
    body: Any = err.body
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return f"HTTP {err.status_code}: {message or err.message}"
