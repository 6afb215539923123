"""A room's transcript as the model reads it: plain message dicts, kept valid between turns."""

from __future__ import annotations

import json
from typing import Any


def append_user_text(messages: list[dict[str, Any]], text: str) -> None:
    """Add the person's text; after tool results it joins that user message (roles alternate)."""
    # A round whose process stopped before its results were saved (a crash, a restart) ends
    # in tool_use blocks without results, which the API refuses in every later turn: close it.
    last = messages[-1] if messages and messages[-1]["role"] == "assistant" else {}
    content = last.get("content")
    blocks = content if isinstance(content, list) else []
    if calls := [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]:
        messages.append(cancelled_results(calls))
    if messages and messages[-1]["role"] == "user":
        content = messages[-1]["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        messages[-1]["content"] = [*content, {"type": "text", "text": text}]
    else:
        messages.append({"role": "user", "content": text})


def text_of(message: dict[str, Any]) -> str:
    """The text an assistant message says (its text blocks, or its string content)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    blocks = content if isinstance(content, list) else []
    texts = (b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
    return "\n".join(t for t in texts if t)


def open_round(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool calls of a trailing assistant message that has no results yet."""
    if not messages or messages[-1]["role"] != "assistant":
        return []
    content = messages[-1]["content"]
    blocks = content if isinstance(content, list) else []
    return [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]


def cancelled_results(calls: list[dict[str, Any]]) -> dict[str, Any]:
    """Tool results for a round cut short, so the transcript stays valid for the next turn."""
    error = json.dumps({"error": "Tool call cancelled"})
    blocks = [
        {"type": "tool_result", "tool_use_id": c["id"], "content": error, "is_error": True}
        for c in calls
    ]
    return {"role": "user", "content": blocks}
