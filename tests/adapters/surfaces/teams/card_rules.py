"""Adaptive Card rules a JSON Schema cannot express, plus Teams's limits, and the schema itself.

An independent checker: it does not import the adapter's constants, so a wrong limit there is
caught here. `card_problems` returns what is wrong (empty when valid); `assert_valid_card`
fails a test with the whole list. `schema_problems` validates against the Adaptive Card 1.5
JSON Schema of microsoft/AdaptiveCards (MIT), copied in tests/conformance_data/teams (see its
README).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any

import jsonschema

from tests.conformance import VENDORED

SCHEMA = VENDORED / "teams" / "adaptive-card-1.5.schema.json"
MESSAGE_LIMIT = 28_000  # Teams: ~28 KB for a whole message; the card alone must stay under
REFRESH_USERS = 60  # Teams refreshes automatically for at most 60 users
CARD_ACTIONS = 6  # Teams shows at most 6 card-level actions

# The schema spells these as enums *or* case-insensitive patterns, and the patterns are not
# anchored (`^(a)|(b)$` also matches "bogus-b"): so the schema lets through what renderers
# ignore. Checked here, case-insensitively as renderers read them.
ENUMS: dict[tuple[str, str], set[str]] = {
    ("TextBlock", "color"): {"default", "dark", "light", "accent", "good", "warning", "attention"},
    ("TextBlock", "size"): {"default", "small", "medium", "large", "extralarge"},
    ("TextBlock", "weight"): {"default", "lighter", "bolder"},
    ("TextBlock", "style"): {"default", "heading"},
    ("TextBlock", "spacing"): {"default", "none", "small", "medium", "large", "extralarge"},
    ("Input.Text", "style"): {"text", "tel", "url", "email", "password"},
    ("Input.ChoiceSet", "style"): {"compact", "expanded", "filtered"},
    ("Action.Execute", "style"): {"default", "positive", "destructive"},
    ("Action.Execute", "associatedInputs"): {"auto", "none"},
}
INTERACTIVE = ("Input.", "Action.", "ActionSet")


def card_size(card: dict[str, Any]) -> int:
    """Bytes as sent: compact JSON, UTF-8 (as httpx, and so the Teams SDK, serialises)."""
    return len(json.dumps(card, ensure_ascii=False, separators=(",", ":")).encode())


class _Checker:
    def __init__(self, *, interactive: bool) -> None:
        self.interactive = interactive
        self.problems: list[str] = []
        self.input_ids: set[str] = set()

    def fail(self, path: str, what: str) -> None:
        self.problems.append(f"{path}: {what}")

    def enums(self, path: str, node: dict[str, Any]) -> None:
        for (kind, key), allowed in ENUMS.items():
            value = node.get(key)
            if node.get("type") != kind or value is None:
                continue
            if not isinstance(value, str) or value.lower() not in allowed:
                self.fail(path, f"{key} {value!r} is not one of {sorted(allowed)}")

    def execute(self, path: str, action: dict[str, Any]) -> None:
        verb, data = action.get("verb"), action.get("data")
        if not isinstance(verb, str) or not verb:
            self.fail(path, "Action.Execute without a verb")
        request_id = data.get("request_id") if isinstance(data, dict) else None
        if not isinstance(request_id, str) or not request_id:
            self.fail(path, "Action.Execute without data.request_id")

    def action(self, path: str, action: dict[str, Any]) -> None:
        if not self.interactive:
            self.fail(path, f"interactive {action.get('type')} on a read-only card")
        title = action.get("title")
        if not isinstance(title, str) or not title.strip():
            self.fail(path, "action without a title")
        if action.get("type") == "Action.Execute":
            self.execute(path, action)
        elif action.get("type") == "Action.ShowCard":
            self.card(f"{path}.card", action.get("card") or {}, top=False)

    def choices(self, path: str, element: dict[str, Any]) -> None:
        values = [c.get("value") for c in element.get("choices", [])]
        if len(set(values)) != len(values):
            self.fail(path, "duplicate choice values")
        if any("," in str(v) for v in values):
            self.fail(path, "a choice value with a comma (multi-select separator)")
        if any(not str(c.get("title", "")).strip() for c in element.get("choices", [])):
            self.fail(path, "a choice without a title")

    def element(self, path: str, element: dict[str, Any]) -> None:
        kind = str(element.get("type", ""))
        self.enums(path, element)
        if "selectAction" in element:
            self.action(f"{path}.selectAction", element["selectAction"])
        if kind.startswith("Input."):
            if not self.interactive:
                self.fail(path, f"{kind} on a read-only card")
            input_id = element.get("id")
            if not isinstance(input_id, str) or not input_id:
                self.fail(path, "input without an id")
            elif input_id in self.input_ids:
                self.fail(path, f"duplicate input id {input_id!r}")
            self.input_ids.add(str(input_id))
        if kind == "Input.ChoiceSet":
            self.choices(path, element)
        if kind == "TextBlock" and not str(element.get("text", "")).strip():
            self.fail(path, "empty TextBlock")
        for i, action in enumerate(element.get("actions", []) if kind == "ActionSet" else []):
            self.enums(f"{path}.actions[{i}]", action)
            self.action(f"{path}.actions[{i}]", action)
        for i, item in enumerate(element.get("items", []) if kind == "Container" else []):
            self.element(f"{path}.items[{i}]", item)

    def refresh(self, refresh: Any) -> None:
        action = refresh.get("action") if isinstance(refresh, dict) else None
        if not isinstance(action, dict) or action.get("type") != "Action.Execute":
            self.fail("refresh", "refresh without an Action.Execute")
            return
        self.execute("refresh.action", action)
        users = refresh.get("userIds", [])
        if len(users) > REFRESH_USERS or len(set(users)) != len(users):
            self.fail("refresh.userIds", f"{len(users)} ids, or duplicates")

    def card(self, path: str, card: dict[str, Any], *, top: bool) -> None:
        if card.get("type") != "AdaptiveCard":
            self.fail(path, "not an AdaptiveCard")
        if top and card.get("version") != "1.5":
            self.fail(path, f"version {card.get('version')!r}")
        for i, element in enumerate(card.get("body", [])):
            self.element(f"{path}.body[{i}]", element)
        actions = card.get("actions", [])
        if len(actions) > CARD_ACTIONS:
            self.fail(f"{path}.actions", f"{len(actions)} actions > {CARD_ACTIONS}")
        for i, action in enumerate(actions):
            self.enums(f"{path}.actions[{i}]", action)
            self.action(f"{path}.actions[{i}]", action)


def card_problems(card: dict[str, Any], *, interactive: bool) -> list[str]:
    """What is wrong with `card`; `interactive` says whether inputs and actions may appear
    (only the live executing card); a refresh clause is allowed either way."""
    checker = _Checker(interactive=interactive)
    checker.card("card", card, top=True)
    if "refresh" in card:
        checker.refresh(card["refresh"])
    size = card_size(card)
    if size >= MESSAGE_LIMIT:
        checker.fail("card", f"{size} bytes >= {MESSAGE_LIMIT}")
    return checker.problems


def assert_valid_card(card: dict[str, Any], *, interactive: bool) -> None:
    problems = card_problems(card, interactive=interactive) + schema_problems(card)
    assert not problems, "\n".join(problems)


# -- the schema --------------------------------------------------------------------------------


@functools.cache
def _validator() -> jsonschema.Draft6Validator:
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft6Validator.check_schema(schema)
    return jsonschema.Draft6Validator(schema)


def schema_problems(card: dict[str, Any]) -> list[str]:
    """The Adaptive Card 1.5 schema's verdict (its deepest errors first, as `best_match`)."""
    errors = sorted(_validator().iter_errors(card), key=jsonschema.exceptions.relevance)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}" for e in errors]


# -- reading cards -----------------------------------------------------------------------------


def walk(node: Any) -> Iterator[Any]:
    """Every dict, list and scalar in a card, depth first."""
    yield node
    if isinstance(node, dict):
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from walk(item)


def elements(card: dict[str, Any]) -> list[dict[str, Any]]:
    """Every typed object of the card (elements, inputs, actions) but the refresh clause."""
    rest = {k: v for k, v in card.items() if k != "refresh"}
    return [n for n in walk(rest) if isinstance(n, dict) and "type" in n][1:]


def interactive_elements(card: dict[str, Any]) -> list[dict[str, Any]]:
    """Everything a person can act on: inputs and actions (not the refresh clause)."""
    return [e for e in elements(card) if str(e["type"]).startswith(INTERACTIVE)]


def inputs(card: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in elements(card) if str(e["type"]).startswith("Input.")]


def executes(card: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in elements(card) if e["type"] == "Action.Execute"]


def markdown_strings(card: dict[str, Any]) -> list[str]:
    """The texts Teams renders as markdown: TextBlocks, facts, the fallback text."""
    texts = [str(card.get("fallbackText", ""))]
    for node in walk(card):
        if isinstance(node, dict) and node.get("type") == "TextBlock":
            texts.append(node["text"])
        if isinstance(node, dict) and node.get("type") == "FactSet":
            texts += [t for fact in node["facts"] for t in (fact["title"], fact["value"])]
    return texts


def plain_strings(card: dict[str, Any]) -> list[str]:
    """The texts Teams shows as written: labels, placeholders, choices, titles, messages."""
    keys = ("label", "placeholder", "errorMessage")
    texts = [str(e[k]) for e in elements(card) for k in keys if k in e]
    texts += [str(e["title"]) for e in elements(card) if e["type"].startswith("Action.")]
    for element in inputs(card):
        texts += [str(c["title"]) for c in element.get("choices", [])]
    return texts
