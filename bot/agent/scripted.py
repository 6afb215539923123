"""A scripted model: no API key needed, and every built-in human tool gets asked once.

It plays a release manager deploying a service, so the demo (and a Slack or Teams workspace
without an Anthropic key) shows each kind of request in a believable order. With an agent
file's tools offered too, it then calls the first of them once (`deploy` of examples/ops),
with arguments that fit its schema.
"""

from __future__ import annotations

import json
import re
import secrets
from typing import Any

from bot.agent import AssistantTurn, ToolStartCallback
from bot.agent.provider import TextDeltaCallback
from bot.tools import AITool
from bot.words.tool_names import BUILTIN_TOOL_NAMES

SCRIPT: list[tuple[str, str, dict[str, Any]]] = [
    (
        "I'll prepare the release. First, a question.",
        "AskUserQuestion",
        {"question": "What should the release be called?"},
    ),
    (
        "Thanks. The deploy needs a sign-off.",
        "requestApproval",
        {"action": "Deploy the release to production", "reason": "All checks passed on staging"},
    ),
    (
        "Which region should go first?",
        "selectOption",
        {"question": "Which region first?", "options": ["eu-west-1", "us-east-1", "ap-south-1"]},
    ),
    (
        "I need a few details for the change record.",
        "collectUserData",
        {
            "fields": [
                {"name": "ticket", "label": "Change ticket", "type": "text"},
                {"name": "replicas", "label": "Replica count", "type": "number"},
                {"name": "contact", "label": "On-call email", "type": "email"},
            ]
        },
    ),
    (
        "Please attach the runbook.",
        "uploadFile",
        {"purpose": "The rollback runbook for this release", "acceptedTypes": ["pdf", "txt", "md"]},
    ),
    (
        "Last step, and it cannot be undone.",
        "confirmAction",
        {
            "title": "Drop the old database replica",
            "message": "The previous release's replica will be deleted.",
            "severity": "danger",
        },
    ),
]


class ScriptedAIProvider:
    """Asks each tool of SCRIPT that the turn offers, in order, then summarises the answers."""

    def __init__(
        self,
        script: list[tuple[str, str, dict[str, Any]]] | None = None,
        *,
        call_tools: bool = False,
    ) -> None:
        self.script = SCRIPT if script is None else script
        # Then call the first offered tool that asks nobody (an agent file's), once.
        self.call_tools = call_tools

    async def generate(
        self,
        *,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[AITool],
        on_tool_start: ToolStartCallback,
        on_text_delta: TextDeltaCallback | None = None,
    ) -> AssistantTurn:
        offered = {tool.name for tool in tools}
        steps = [step for step in self.script if step[1] in offered]
        own = _first_own_tool(tools, {step[1] for step in self.script}) if self.call_tools else None
        if own is not None:  # the agent file's tools: the first is called once, last
            steps.append((f"Everything is ready: I'll call {own.name}.", own.name,
                          example_arguments(own.parameters)))  # fmt: skip
        asked = _tool_calls_since_last_text(messages)
        if asked >= len(steps):
            summary = _summary(messages, asked)
            _stream(summary, on_text_delta)
            return AssistantTurn([{"type": "text", "text": summary}], "end_turn")
        text, name, arguments = steps[asked]
        call_id = f"toolu_scripted_{secrets.token_hex(6)}"
        _stream(text, on_text_delta)
        on_tool_start(name, call_id)
        content: list[dict[str, Any]] = [
            {"type": "text", "text": text},
            {"type": "tool_use", "id": call_id, "name": name, "input": arguments},
        ]
        return AssistantTurn(content, "tool_use")


def _stream(text: str, on_text_delta: TextDeltaCallback | None) -> None:
    """Tell the text word by word, as a model streaming it would."""
    if on_text_delta is not None:
        for word in re.split(r"(?<=\s)(?=\S)", text):
            if word:
                on_text_delta(word)


def _first_own_tool(tools: list[AITool], scripted: set[str]) -> AITool | None:
    """The first offered tool that asks nobody: one of the agent file's (an MCP server's)."""
    human = scripted | set(BUILTIN_TOOL_NAMES)
    return next((tool for tool in tools if tool.name not in human), None)


def example_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments that fit a tool's JSON schema: each required property's default, first
    example or first option, else a plain value of its type."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return {}
    required = set(schema.get("required") or ())
    return {
        name: _example(spec)
        for name, spec in properties.items()
        if name in required and isinstance(spec, dict)
    }


def _example(spec: dict[str, Any]) -> Any:
    if "default" in spec:
        return spec["default"]
    examples = spec.get("examples")
    if isinstance(examples, list) and examples:
        return examples[0]
    for key in ("enum", "oneOf", "anyOf"):
        options = spec.get(key)
        if isinstance(options, list) and options:
            first = options[0]
            if key == "enum":
                return first
            if isinstance(first, dict):
                return first["const"] if "const" in first else _example(first)
    kind = spec.get("type")
    plain: dict[str, Any] = {
        "string": "demo", "integer": 1, "number": 1, "boolean": True, "array": [], "object": {},
    }  # fmt: skip
    return plain.get(kind, "demo") if isinstance(kind, str) else "demo"


def _tool_calls_since_last_text(messages: list[dict[str, Any]]) -> int:
    """How many tool calls this turn has made: those after the person's last own words."""
    count = 0
    for message in reversed(messages):
        content = message["content"]
        if message["role"] == "user" and _has_text(content):
            break
        if message["role"] == "assistant":
            count += sum(1 for block in content if block.get("type") == "tool_use")
    return count


def _has_text(content: Any) -> bool:
    if isinstance(content, str):
        return True
    return any(block.get("type") == "text" for block in content)


def _summary(messages: list[dict[str, Any]], asked: int) -> str:
    results = [
        block
        for message in messages
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ][-asked:] if asked else []  # fmt: skip
    if not results:
        return "Nothing to do."
    lines = [f"- {_describe(block)}" for block in results]
    return "Here is what you told me:\n" + "\n".join(lines)


def _describe(block: dict[str, Any]) -> str:
    content = block.get("content")
    text = content if isinstance(content, str) else json.dumps(content)
    return f"error: {text}" if block.get("is_error") else text
