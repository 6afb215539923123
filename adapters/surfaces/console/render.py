"""What the console shows of a request's view, and how a typed line becomes a form input. Pure.

Everything a request says comes from the core's `RequestView` (title, facts, status, outcome,
controls and their forms); this module only lays it out as lines of a terminal. Text that a
model or a person wrote is kept on one line, with control characters and bidi overrides shown
escaped (adapters/ops/terminal.py), so it can neither fake a prompt of ours nor move the cursor or
clear the screen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from adapters.ops.terminal import one_line
from bot import RenderState
from bot.human_tools.forms import FieldKind, FormField, Option
from bot.requests.kinds import Control, Fact, Verb
from bot.requests.view import RequestView
from bot.words.phrases import Phrase, PlainFormatter

REJECT_PREFIX = "/reject"
REJECT_HINT = f"(type {REJECT_PREFIX} <reason> at any prompt to decline)"
INDENT = "  "

_MARKS = {
    RenderState.IN_PROGRESS: "…",
    RenderState.EXECUTING: "▶",
    RenderState.COMPLETE: "✓",
    RenderState.REJECTED: "✗",
    RenderState.EXPIRED: "⌛",
    RenderState.CANCELLED: "-",
    RenderState.UNDELIVERABLE: "!",
}


def phrase(words: Phrase) -> str:
    return one_line(words.render(PlainFormatter()))


def fact(item: Fact) -> str:
    return INDENT + (f"{one_line(item.label)}: " if item.label else "") + one_line(item.value)


def draw(view: RequestView) -> str:
    """The lines printed for a request in its state: in full while it waits for an answer,
    else its title, how it ended and the answer (or the reason)."""
    mark = _MARKS.get(view.state, "-")
    severity = f"[{view.severity.upper()}] " if view.severity in ("warning", "danger") else ""
    head = f"{mark} {severity}{one_line(view.title)}"
    if view.state is RenderState.EXECUTING:
        lines = [head, *(fact(f) for f in view.facts), INDENT + phrase(view.status)]
    else:
        lines = [f"{head} — {phrase(view.status)}", *(fact(f) for f in view.outcome)]
    return "\n".join(lines)


def agent_lines(text: str) -> str:
    """The agent's words: its own lines kept, each indented under `agent> `, escaped."""
    lines = [one_line(line) for line in text.splitlines() or [""]]
    return "\n".join(["agent> " + lines[0], *("       " + line for line in lines[1:])])


# -- answering: the controls as a menu, a form field by field -------------------------------


def answering(controls: Sequence[Control]) -> list[Control]:
    """The controls other than Decline (which /reject and the menu give)."""
    return [c for c in controls if c.verb is not Verb.DECLINE]


def menu(controls: Sequence[Control]) -> str:
    return INDENT + "  ".join(f"{i}) {one_line(c.label)}" for i, c in enumerate(controls, 1))


def menu_prompt(controls: Sequence[Control]) -> str:
    return f"{INDENT}choose [1-{len(controls)}]"


def pick(controls: Sequence[Control], line: str) -> Control:
    """The control a typed line names, by number or by label; ValueError says what to type."""
    typed = line.strip()
    for number, control in enumerate(controls, 1):
        if typed == str(number) or typed.casefold() == control.label.casefold():
            return control
    raise ValueError(f"type a number from 1 to {len(controls)}")


def rejection(line: str) -> str | None:
    """The reason of a `/reject <reason>` line, or None for any other line."""
    typed = line.strip()
    if typed != REJECT_PREFIX and not typed.startswith(REJECT_PREFIX + " "):
        return None
    return typed.removeprefix(REJECT_PREFIX).strip()


def sure_prompt(question: Phrase) -> str:
    return f"{INDENT}{phrase(question)} [y/n]"


def yes(line: str) -> bool:
    return line.strip().lower() in {"y", "yes"}


@dataclass(frozen=True, slots=True)
class FieldPrompt:
    """What is printed before a field is asked (its hint, its options) and the prompt."""

    before: list[str]
    prompt: str


_HINTS = {
    FieldKind.NUMBER: "a number",
    FieldKind.INTEGER: "a whole number",
    FieldKind.EMAIL: "an email address",
    FieldKind.URL: "https://…",
    FieldKind.USER: "a user id",
    FieldKind.DATE: "YYYY-MM-DD",
    FieldKind.TIME: "HH:MM",
    FieldKind.DATETIME: "YYYY-MM-DD HH:MM, UTC unless an offset is given",
    FieldKind.BOOLEAN: "y/n",
    FieldKind.CHOICES: "numbers, comma-separated",
    FieldKind.FILE: "the path of a file",
}


def field_prompt(spec: FormField) -> FieldPrompt:
    """How a field is asked: one line per kind, the options of a choice numbered above it."""
    hints = [_HINTS.get(spec.kind, "JSON" if spec.json_value else "")]
    if spec.kind is FieldKind.CHOICE:
        hints = [f"1-{len(spec.options)}"]
    if spec.minimum is not None or spec.maximum is not None:
        hints.append(_bounds(spec.minimum, spec.maximum))
    if spec.accept:
        hints.append("accepted: " + ", ".join(spec.accept))
    if spec.value is not None:
        hints.append(f"Enter for {_shown_value(spec)}")
    elif not spec.required:
        hints.append("Enter to skip")
    hint = "; ".join(one_line(h) for h in hints if h)
    before = [f"{INDENT}  {one_line(spec.description)}"] if spec.description else []
    before += [f"{INDENT}  {one_line(o.label)}" for o in spec.options]
    return FieldPrompt(before, f"{INDENT}{one_line(spec.label)}" + (f" ({hint})" if hint else ""))


def _bounds(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f"{low:g} to {high:g}"
    return f"at least {low:g}" if low is not None else f"at most {high:g}"


def _shown_value(spec: FormField) -> str:
    by_value = {o.value: o.label for o in spec.options}
    values = spec.value if isinstance(spec.value, list) else [spec.value]
    return ", ".join(by_value.get(str(v), str(v)) for v in values)


def field_input(spec: FormField, line: str) -> Any:
    """The input a typed line gives a field, as the core's `read_form` takes it (a file's path
    is read by the surface). Choices are typed by number; ValueError says what to type."""
    typed = line.strip()
    if not typed:
        return spec.value if spec.value is not None else ""
    if spec.kind is FieldKind.CHOICE:
        return _option(spec.options, typed)
    if spec.kind is FieldKind.CHOICES:
        return [_option(spec.options, item) for item in typed.split(",") if item.strip()]
    return typed


def _option(options: Sequence[Option], typed: str) -> str:
    try:
        number = int(typed.strip())
    except ValueError:
        number = 0
    if not 1 <= number <= len(options):
        raise ValueError(f"type a number from 1 to {len(options)}")
    return options[number - 1].value


def field_errors(fields: Sequence[FormField], errors: dict[str, str]) -> list[str]:
    """The core's error for each field, by the field's label ("" is the form as a whole)."""
    labels = {f.name: f.label for f in fields}
    return [
        f"{INDENT}! " + (f"{one_line(labels[name])}: " if name in labels else "") + one_line(text)
        for name, text in errors.items()
    ]
