"""hitl-bridge core: the human-input primitive, human tools, the agent loop and the store.

The public names follow the seed (RoomKit's human-in-the-loop tools); `Bridge` is its `kit`.
"""

from bot.agent import AIChannel, AIProvider, AnthropicAIProvider, AssistantTurn
from bot.bridge import Bridge
from bot.errors import (
    AnswerInvalidError,
    ConfigurationError,
    HumanInputRejectedError,
    ToolFailedError,
    ToolRefusedError,
    UndeliverableError,
    UnservedToolCallError,
)
from bot.hooks import HookContext, HookExecution, HookResult, HookTrigger, ToolCallEvent
from bot.human_input import (
    HumanInputHandler,
    PendingInput,
    PendingInputEvent,
    PendingInputStatus,
    RenderState,
    RequestUpdate,
)
from bot.human_tools import BUILTIN_TOOLS, HumanInputToolHandler, HumanTool
from bot.surfaces import Surface
from bot.tool_context import ToolCallContext, current_tool_actor_id, tool_turn_context
from bot.tools import AITool, ToolHandler, compose_tool_handlers

__all__ = [
    "BUILTIN_TOOLS",
    "AIChannel",
    "AIProvider",
    "AITool",
    "AnswerInvalidError",
    "AnthropicAIProvider",
    "AssistantTurn",
    "Bridge",
    "ConfigurationError",
    "HookContext",
    "HookExecution",
    "HookResult",
    "HookTrigger",
    "HumanInputHandler",
    "HumanInputRejectedError",
    "HumanInputToolHandler",
    "HumanTool",
    "PendingInput",
    "PendingInputEvent",
    "PendingInputStatus",
    "RenderState",
    "RequestUpdate",
    "Surface",
    "ToolCallContext",
    "ToolCallEvent",
    "ToolFailedError",
    "ToolHandler",
    "ToolRefusedError",
    "UndeliverableError",
    "UnservedToolCallError",
    "compose_tool_handlers",
    "current_tool_actor_id",
    "tool_turn_context",
]
