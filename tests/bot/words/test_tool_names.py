"""bot/words/tool_names.py: the names the agent file and the policies check against are the
built-in tools' own, in the order they are offered, and the asked kinds' tools are named by it."""

from __future__ import annotations

from bot.human_tools.elicitation import ELICIT_INPUT_TOOL
from bot.human_tools.tool import BUILTIN_TOOLS
from bot.words.tool_names import BUILTIN_TOOL_NAMES, ELICIT_INPUT, GATE_TOOL


def test_the_built_in_names_are_the_registry_s_in_its_order() -> None:
    assert tuple(BUILTIN_TOOLS) == BUILTIN_TOOL_NAMES
    assert all(BUILTIN_TOOLS[name].name == name for name in BUILTIN_TOOL_NAMES)


def test_the_asked_kinds_are_not_built_in_tools() -> None:
    assert ELICIT_INPUT_TOOL.name == ELICIT_INPUT
    assert {GATE_TOOL, ELICIT_INPUT}.isdisjoint(BUILTIN_TOOL_NAMES)
