"""hitl-bridge core: the human-input primitive, human tools, the agent loop and the store.

The public names follow RoomKit's human-input primitive (docs/architecture.md); `Bridge` is its
`kit`.

Each name is imported on first use (PEP 562 `__getattr__`), not with the package: `import
hitl_client`, or a command that runs no agent, does not pay for the agent, the store and their
SDKs (seconds). `from bot import AIChannel` works as ever.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.agent import AIChannel, AIProvider, AnthropicAIProvider, AssistantTurn
    from bot.agent.hooks import HookContext, HookExecution, HookResult, HookTrigger, ToolCallEvent
    from bot.bridge.root import Bridge
    from bot.bridge.surfaces import Surface
    from bot.errors import (
        AnswerInvalidError,
        ConfigurationError,
        HumanInputRejectedError,
        ToolFailedError,
        ToolRefusedError,
        UndeliverableError,
        UnservedToolCallError,
    )
    from bot.human_input import (
        HumanInputHandler,
        PendingInput,
        PendingInputEvent,
        PendingInputStatus,
        RenderState,
        RequestUpdate,
    )
    from bot.human_tools.tool import BUILTIN_TOOLS, HumanInputToolHandler, HumanTool
    from bot.tools import AITool, ToolHandler, compose_tool_handlers
    from bot.tools.context import ToolCallContext, current_tool_actor_id, tool_turn_context

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

# The module that defines each public name.
_MODULES = {
    "AIChannel": "bot.agent",
    "AIProvider": "bot.agent",
    "AnthropicAIProvider": "bot.agent",
    "AssistantTurn": "bot.agent",
    "Bridge": "bot.bridge.root",
    "AnswerInvalidError": "bot.errors",
    "ConfigurationError": "bot.errors",
    "HumanInputRejectedError": "bot.errors",
    "ToolFailedError": "bot.errors",
    "ToolRefusedError": "bot.errors",
    "UndeliverableError": "bot.errors",
    "UnservedToolCallError": "bot.errors",
    "HookContext": "bot.agent.hooks",
    "HookExecution": "bot.agent.hooks",
    "HookResult": "bot.agent.hooks",
    "HookTrigger": "bot.agent.hooks",
    "ToolCallEvent": "bot.agent.hooks",
    "HumanInputHandler": "bot.human_input",
    "PendingInput": "bot.human_input",
    "PendingInputEvent": "bot.human_input",
    "PendingInputStatus": "bot.human_input",
    "RenderState": "bot.human_input",
    "RequestUpdate": "bot.human_input",
    "BUILTIN_TOOLS": "bot.human_tools.tool",
    "HumanInputToolHandler": "bot.human_tools.tool",
    "HumanTool": "bot.human_tools.tool",
    "Surface": "bot.bridge.surfaces",
    "ToolCallContext": "bot.tools.context",
    "current_tool_actor_id": "bot.tools.context",
    "tool_turn_context": "bot.tools.context",
    "AITool": "bot.tools",
    "ToolHandler": "bot.tools",
    "compose_tool_handlers": "bot.tools",
}

if not TYPE_CHECKING:  # mypy reads the imports above: an unknown name stays an error

    def __getattr__(name: str) -> object:
        module = _MODULES.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value  # the next lookup does not come here
        return value

    def __dir__() -> list[str]:
        return sorted(set(globals()) | set(__all__))
