"""What the console shows for a request, and how typed replies become answers. Pure."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot import RenderState, RequestUpdate

REJECT_PREFIX = "/reject"


@dataclass(frozen=True, slots=True)
class Prompt:
    """One line to ask for; `key` names the value in the replies."""

    key: str
    text: str


def _one_line(text: object) -> str:
    """Model-written text on one line, so it cannot fake a prompt of ours."""
    return " ".join(str(text).split())


def describe(update: RequestUpdate) -> str:
    """The lines printed for a transition."""
    args, state = update.arguments, update.state
    who = f" (by {update.settled_by})" if update.settled_by else ""
    if state is RenderState.IN_PROGRESS:
        return f"… preparing a request ({update.tool_name})"
    if state is RenderState.EXECUTING:
        return "\n".join(
            [f"▶ {update.tool_name} needs you", *_detail_lines(update.tool_name, args)]
        )
    if state is RenderState.COMPLETE:
        return f"✓ answered{who}: {_one_line(update.result)}"
    if state is RenderState.REJECTED:
        return f"✗ rejected{who}: {_one_line(update.reason or 'no reason given')}"
    if state is RenderState.EXPIRED:
        return f"⌛ expired: {_one_line(update.reason)}"
    return f"- withdrawn: {_one_line(update.reason)}"


def _detail_lines(tool_name: str, args: dict[str, Any]) -> list[str]:
    if tool_name == "requestApproval":
        return [f"  action: {_one_line(args['action'])}", f"  reason: {_one_line(args['reason'])}"]
    if tool_name == "selectOption":
        options = [f"  {i}. {_one_line(o)}" for i, o in enumerate(args["options"], 1)]
        return [f"  {_one_line(args['question'])}", *options]
    if tool_name == "confirmAction":
        severity = args.get("severity", "info").upper()
        return [f"  [{severity}] {_one_line(args['title'])}", f"  {_one_line(args['message'])}"]
    if tool_name == "uploadFile":
        accepted = ", ".join(args.get("acceptedTypes") or ["any"])
        return [f"  {_one_line(args['purpose'])} (accepted: {_one_line(accepted)})"]
    if tool_name == "AskUserQuestion":
        return [f"  {_one_line(args['question'])}"]
    if tool_name == "collectUserData":
        return ["  please fill in the form below"]
    return [f"  {key}: {_one_line(value)}" for key, value in args.items()]


def prompts_for(tool_name: str, args: dict[str, Any]) -> list[Prompt]:
    """The lines to ask for, in order. Any reply starting with /reject refuses the request."""
    if tool_name == "requestApproval":
        return [Prompt("approved", "approve? [y/n]")]
    if tool_name == "selectOption":
        return [Prompt("choice", f"choice [1-{len(args['options'])}]")]
    if tool_name == "collectUserData":
        return [Prompt(f["name"], f"{_one_line(f['label'])} ({f['type']})") for f in args["fields"]]
    if tool_name == "uploadFile":
        return [Prompt("path", "path of the file to upload")]
    if tool_name == "confirmAction":
        return [Prompt("confirmed", "confirm? [y/n]")]
    return [Prompt("answer", "your answer")]


def answer_from(tool_name: str, args: dict[str, Any], replies: dict[str, str]) -> str:
    """The answer JSON for the replies; ValueError says what to type instead."""
    if tool_name == "requestApproval":
        approved = _yes_no(replies["approved"])
        reason = replies.get("reason", "").strip()
        return json.dumps({"approved": approved, **({"reason": reason} if reason else {})})
    if tool_name == "selectOption":
        return _selection(args["options"], replies["choice"])
    if tool_name == "collectUserData":
        return json.dumps(replies)
    if tool_name == "uploadFile":
        return _upload(replies["path"])
    if tool_name == "confirmAction":
        return json.dumps({"confirmed": _yes_no(replies["confirmed"])})
    if tool_name == "AskUserQuestion":
        return json.dumps({"answer": replies["answer"].strip()})
    return _free_answer(replies["answer"])


def follow_up(tool_name: str, replies: dict[str, str]) -> Prompt | None:
    """A prompt that depends on earlier replies: a reason, after a no to an approval."""
    declined = replies.get("approved", "").strip().lower() in {"n", "no"}
    if tool_name == "requestApproval" and declined and "reason" not in replies:
        return Prompt("reason", "reason (optional)")
    return None


def _yes_no(reply: str) -> bool:
    word = reply.strip().lower()
    if word in {"y", "yes"}:
        return True
    if word in {"n", "no"}:
        return False
    raise ValueError("type y or n")


def _selection(options: list[str], reply: str) -> str:
    try:
        index = int(reply.strip()) - 1
    except ValueError:
        raise ValueError(f"type a number from 1 to {len(options)}") from None
    if not 0 <= index < len(options):
        raise ValueError(f"type a number from 1 to {len(options)}")
    return json.dumps({"selectedIndex": index, "selectedValue": options[index]})


def _upload(reply: str) -> str:
    path = Path(reply.strip()).expanduser()
    if not path.is_file():
        raise ValueError(f"no file at {path}")
    resolved = path.resolve()
    size = resolved.stat().st_size
    return json.dumps({"fileName": path.name, "fileSize": size, "url": resolved.as_uri()})


def _free_answer(reply: str) -> str:
    """A custom tool's answer: JSON as typed, or the text as {"answer": ...}."""
    try:
        json.loads(reply)
    except ValueError:
        return json.dumps({"answer": reply.strip()})
    return reply
