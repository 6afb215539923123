"""The console surface in process: the agent's requests asked at a terminal the test types
into, answered through the core's router, on a real store."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from adapters.surfaces.console.surface import ConsoleSurface, room_of
from bot import AIChannel, Bridge, HumanInputToolHandler
from bot.agent.scripted import SCRIPT, ScriptedAIProvider
from bot.requests.router import Router
from bot.store import SqlStore, open_store

Typed = str | Callable[["Conversation"], Awaitable[str]]


@dataclass
class Conversation:
    """A terminal that answers each prompt with the next typed line (None once they run out)."""

    typed: list[Typed]
    store: SqlStore
    human: HumanInputToolHandler
    out: list[str] = field(default_factory=list)
    prompts: list[str] = field(default_factory=list)

    async def read_line(self, prompt: str) -> str | None:
        self.prompts.append(prompt.strip())
        self.out.append(f"{prompt}> ")
        if not self.typed:
            return None
        line = self.typed.pop(0)
        return line if isinstance(line, str) else await line(self)

    def write(self, text: str) -> None:
        self.out.append(text)

    @property
    def text(self) -> str:
        return "\n".join(self.out)


Step = tuple[str, str, dict[str, Any]]


async def converse(tmp_path: Path, script: list[Step], typed: Iterable[Typed]) -> tuple[Any, ...]:
    """Run one turn of a scripted agent asking with `script`; the tool results it got, and
    the conversation at the terminal."""
    store = await open_store(f"sqlite+aiosqlite:///{tmp_path / 'console.db'}")
    bridge = Bridge(store=store)
    human = HumanInputToolHandler.builtin(timeout=30)
    provider = ScriptedAIProvider(script)
    channel = AIChannel("console", provider=provider, system_prompt="", human_input_handler=human)
    bridge.register_channel(channel)
    conversation = Conversation(list(typed), store, human)
    router = Router(store=store, handler_for=bridge.handler_for, tools=human.tools)
    surface = ConsoleSurface(router, conversation, user="ann")
    bridge.attach(surface)
    await bridge.start()
    try:
        reply = await channel.respond(room_of("ann"), "go", actor_id="ann")
    finally:
        await surface.close()
        await bridge.close()
        await store.close()
    return results(reply), conversation


def results(reply: str) -> list[Any]:
    """The tool results the scripted agent summed up: JSON, or "error: …" text."""
    lines = reply.split("Here is what you told me:\n", 1)[1].splitlines()
    return [
        line.removeprefix("- error: ") if line.startswith("- error: ") else json.loads(line[2:])
        for line in lines
        if line.startswith("- ")
    ]


EVERY_KIND = [
    {"name": "text", "label": "Text", "type": "text"},
    {"name": "long", "label": "Long", "type": "long_text"},
    {"name": "number", "label": "Number", "type": "number", "min": 0},
    {"name": "integer", "label": "Integer", "type": "integer", "max": 10},
    {"name": "email", "label": "Email", "type": "email"},
    {"name": "url", "label": "Url", "type": "url"},
    {"name": "date", "label": "Date", "type": "date"},
    {"name": "time", "label": "Time", "type": "time"},
    {"name": "datetime", "label": "Datetime", "type": "datetime"},
    {"name": "boolean", "label": "Boolean", "type": "boolean"},
    {"name": "choice", "label": "Choice", "type": "choice", "options": ["red", "green", "blue"]},
    {"name": "choices", "label": "Choices", "type": "choices", "options": ["a", "b", "c"]},
    {"name": "user", "label": "User", "type": "user"},
    {"name": "skipped", "label": "Skipped", "type": "text", "required": False},
]


async def test_every_kind_of_field_is_asked_and_answered(tmp_path: Path) -> None:
    runbook = tmp_path / "runbook.md"
    runbook.write_text("# steps\n")
    script: list[Step] = [
        ("Details.", "collectUserData", {"fields": EVERY_KIND}),
        ("A file.", "uploadFile", {"purpose": "The runbook", "acceptedTypes": ["md"]}),
    ]
    typed = [
        " some text ", "several words", "2.5", "7", "ops@example.com", "https://example.com/x",
        "2025-03-01", "09:30", "2025-03-01 10:30+01:00", "y", "2", "3, 1", "U123", "",
        str(runbook),
    ]  # fmt: skip
    (form, upload), conversation = await converse(tmp_path, script, typed)
    assert form == {
        "text": "some text",
        "long": "several words",
        "number": 2.5,
        "integer": 7,
        "email": "ops@example.com",
        "url": "https://example.com/x",
        "date": "2025-03-01",
        "time": "09:30:00",
        "datetime": "2025-03-01T09:30:00Z",
        "boolean": True,
        "choice": "green",
        "choices": ["c", "a"],
        "user": "U123",
    }
    assert upload == {"fileName": "runbook.md", "fileSize": 8, "url": runbook.resolve().as_uri()}
    assert conversation.prompts == [
        "Text",
        "Long",
        "Number (a number; at least 0)",
        "Integer (a whole number; at most 10)",
        "Email (an email address)",
        "Url (https://…)",
        "Date (YYYY-MM-DD)",
        "Time (HH:MM)",
        "Datetime (YYYY-MM-DD HH:MM, UTC unless an offset is given)",
        "Boolean (y/n)",
        "Choice (1-3)",
        "Choices (numbers, comma-separated)",
        "User (a user id)",
        "Skipped (Enter to skip)",
        "File (the path of a file; accepted: md)",
    ]
    assert "    1. red\n    2. green\n    3. blue" in conversation.text
    assert "✓ Information needed — Answered by ann" in conversation.text
    assert "  File: runbook.md (8 bytes)" in conversation.text


async def test_every_built_in_tool_can_be_declined(tmp_path: Path) -> None:
    assert {step[1] for step in SCRIPT} == set(HumanInputToolHandler.builtin().tools)
    typed = [
        "/reject no question",
        "2", "no approval",  # the approval's menu: its Decline control, and a reason
        "/reject no choice",
        "/reject no form",
        "/reject   no file  ",
        "3", "",  # the confirmation's Decline, without a reason
    ]  # fmt: skip
    answers, conversation = await converse(tmp_path, SCRIPT, typed)
    reasons = ["no question", "no approval", "no choice", "no form", "no file", ""]
    assert answers == [
        json.dumps({"error": f"Rejected: {r}" if r else "Rejected"}) for r in reasons
    ]
    for title in (
        "Question", "Approval needed", "Choose an option", "Information needed",
        "File requested", "[DANGER] Drop the old database replica",
    ):  # fmt: skip
        assert f"✗ {title} — Declined by ann" in conversation.text
    assert "  Reason: no file" in conversation.text
    assert conversation.prompts[-1] == "Reason (optional) (Enter to skip)"


async def test_a_field_the_core_finds_wrong_is_asked_again_alone(tmp_path: Path) -> None:
    fields = [
        {"name": "ticket", "label": "Ticket", "type": "text"},
        {"name": "replicas", "label": "Replicas", "type": "integer", "min": 1},
        {"name": "when", "label": "When", "type": "date"},
    ]
    script: list[Step] = [("Details.", "collectUserData", {"fields": fields})]
    typed = ["CHG-1", "zero", "someday", "0", "2025-03-01", "2"]
    (answer,), conversation = await converse(tmp_path, script, typed)
    assert answer == {"ticket": "CHG-1", "replicas": 2, "when": "2025-03-01"}
    assert conversation.prompts == [
        "Ticket",
        "Replicas (a whole number; at least 1)",
        "When (YYYY-MM-DD)",
        "Replicas (a whole number; at least 1)",  # both wrong: both asked again
        "When (YYYY-MM-DD)",
        "Replicas (a whole number; at least 1)",  # 0 is below the minimum
    ]
    text = conversation.text
    assert "  ! Replicas: Enter a number\n  ! When: Enter a date (YYYY-MM-DD)" in text
    assert "  ! Replicas: At least 1" in text


async def test_an_answer_the_tool_refuses_is_asked_again(tmp_path: Path) -> None:
    notes = tmp_path / "notes.exe"
    notes.write_bytes(b"MZ")
    runbook = tmp_path / "runbook.md"
    runbook.write_text("# steps\n")
    script: list[Step] = [("A file.", "uploadFile", {"purpose": "p", "acceptedTypes": ["md"]})]
    typed = [str(tmp_path / "missing.md"), str(notes), str(runbook)]
    (answer,), conversation = await converse(tmp_path, script, typed)
    assert answer["fileName"] == "runbook.md"
    assert f"  ! no file at {tmp_path / 'missing.md'}" in conversation.text
    assert "  ! File: " in conversation.text  # the tool's own check of the accepted types
    assert len(conversation.prompts) == 3


async def test_a_dangerous_control_asks_first_and_no_goes_back_to_the_menu(
    tmp_path: Path,
) -> None:
    confirm = SCRIPT[-1]
    typed = ["maybe", "1", "n", "confirm", "yes"]
    (answer,), conversation = await converse(tmp_path, [confirm], typed)
    assert answer == {"confirmed": True}
    assert conversation.prompts == [
        "choose [1-3]",
        "choose [1-3]",
        "Are you sure? This cannot be undone. [y/n]",
        "choose [1-3]",
        "Are you sure? This cannot be undone. [y/n]",
    ]
    assert "  ! type a number from 1 to 3" in conversation.text
    assert conversation.text.count("1) Confirm  2) Cancel  3) Decline") == 2


async def test_cancel_is_an_answer_not_a_decline(tmp_path: Path) -> None:
    (answer,), _ = await converse(tmp_path, [SCRIPT[-1]], ["2"])
    assert answer == {"confirmed": False}


async def test_an_answer_to_a_request_settled_meanwhile_is_told_why(tmp_path: Path) -> None:
    async def settled_elsewhere(conversation: Conversation) -> str:
        (request,) = await conversation.store.list_pending()
        await conversation.human.handler.answer(request.id, '{"answer": "from Slack"}', by="bob")
        return "mine"

    script: list[Step] = [SCRIPT[0]]
    (answer,), conversation = await converse(tmp_path, script, [settled_elsewhere])
    assert answer == {"answer": "from Slack"}
    assert "  ! This request was already answered by bob" in conversation.text


@pytest.mark.parametrize("closed", [True, False])
async def test_input_closed_declines_what_is_asked(tmp_path: Path, closed: bool) -> None:
    typed: list[Typed] = [] if closed else ["/reject"]
    (answer,), _ = await converse(tmp_path, [SCRIPT[1]], typed)
    reason = "Rejected: The console was closed" if closed else "Rejected"
    assert answer == json.dumps({"error": reason})
