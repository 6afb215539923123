"""The agent: AIChannel's tool loop (channel), the model it calls (provider, the only module
importing anthropic) and the transcript both keep valid."""

from bot.agent.channel import AIChannel
from bot.agent.provider import (
    INTERRUPTED,
    AIProvider,
    AnthropicAIProvider,
    AssistantTurn,
    ReplyInterruptedError,
    TextCallback,
    ToolStartCallback,
)

__all__ = [
    "INTERRUPTED",
    "AIChannel",
    "AIProvider",
    "AnthropicAIProvider",
    "AssistantTurn",
    "ReplyInterruptedError",
    "TextCallback",
    "ToolStartCallback",
]
