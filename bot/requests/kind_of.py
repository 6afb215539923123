"""Which kind a request is shown and answered as, whoever asked it."""

from __future__ import annotations

from bot.human_tools.elicitation import ELICIT_INPUT_TOOL
from bot.human_tools.tool import BUILTIN_TOOLS, HumanTool
from bot.requests.asked_kinds import ELICIT, GATE
from bot.requests.kinds import BUILTIN_KINDS, Kind, generic_kind
from bot.words.tool_names import ELICIT_INPUT, GATE_TOOL


def kind_of(tool_name: str, tool: HumanTool | None) -> Kind:
    """The kind a request is shown and answered as: a built-in tool served as one (its own
    models registered), or the generic kind (a custom tool, a tool declared by name only)."""
    if tool is not None and BUILTIN_TOOLS.get(tool_name) is tool:
        return BUILTIN_KINDS[tool_name]
    if tool_name == ELICIT_INPUT and (tool is None or tool is ELICIT_INPUT_TOOL):
        return ELICIT  # asked by an MCP server, not the model: no tool need be registered
    if tool_name == GATE_TOOL:
        return GATE  # asked by an approval gate, not the model: no tool is registered
    return generic_kind(tool_name, tool)
