"""Block Kit rules a JSON Schema cannot express, plus Slack's documented limits.

An independent checker: it does not import the adapter's constants, so a wrong limit there is
caught here. Lengths are counted in UTF-16 units, the stricter reading of "characters".
`message_problems` / `modal_problems` return what is wrong (empty when valid); the `assert_`
forms fail a test with the whole list.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema

from tests.conformance import conformance_file

MESSAGE_BLOCKS = 50
MODAL_BLOCKS = 100
MESSAGE_TEXT = 40_000
STYLES = {"primary", "danger"}
INPUT_ELEMENTS = {
    "plain_text_input",
    "number_input",
    "email_text_input",
    "url_text_input",
    "file_input",
    "static_select",
    "radio_buttons",
    "checkboxes",
    "datepicker",
    "timepicker",
    "datetimepicker",
    "users_select",
    "multi_static_select",
}


def units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


class _Checker:
    def __init__(self) -> None:
        self.problems: list[str] = []
        self.action_ids: set[str] = set()
        self.block_ids: set[str] = set()

    def fail(self, path: str, what: str) -> None:
        self.problems.append(f"{path}: {what}")

    # -- text objects -----------------------------------------------------------------------

    def text(self, path: str, obj: Any, limit: int, *, plain_only: bool = False) -> None:
        if not isinstance(obj, dict):
            self.fail(path, "text object missing")
            return
        kind = obj.get("type")
        if kind not in ("plain_text", "mrkdwn") or (plain_only and kind != "plain_text"):
            self.fail(path, f"text type {kind!r}")
        text = obj.get("text")
        if not isinstance(text, str) or not text.strip():
            self.fail(path, "empty text")
        elif units(text) > limit:
            self.fail(path, f"text of {units(text)} > {limit}")
        allowed = (
            {"type", "text", "emoji"} if kind == "plain_text" else {"type", "text", "verbatim"}
        )
        if set(obj) - allowed:
            self.fail(path, f"unknown keys {sorted(set(obj) - allowed)}")

    def string(self, path: str, value: Any, limit: int, *, required: bool = True) -> None:
        if value is None and not required:
            return
        if not isinstance(value, str) or not value:
            self.fail(path, "missing string")
        elif units(value) > limit:
            self.fail(path, f"{units(value)} > {limit}")

    def ids(self, path: str, obj: dict[str, Any]) -> None:
        block_id = obj.get("block_id")
        if block_id is not None:
            self.string(f"{path}.block_id", block_id, 255)
            if block_id in self.block_ids:
                self.fail(path, f"duplicate block_id {block_id!r}")
            self.block_ids.add(block_id)

    def action_id(self, path: str, element: dict[str, Any]) -> None:
        action_id = element.get("action_id")
        self.string(f"{path}.action_id", action_id, 255)
        if not isinstance(action_id, str):
            return
        if action_id in self.action_ids:
            self.fail(path, f"duplicate action_id {action_id!r}")
        self.action_ids.add(action_id)

    # -- elements -----------------------------------------------------------------------------

    def confirm(self, path: str, dialog: Any) -> None:
        if not isinstance(dialog, dict):
            self.fail(path, "confirm is not an object")
            return
        self.text(f"{path}.title", dialog.get("title"), 100, plain_only=True)
        self.text(f"{path}.text", dialog.get("text"), 300)
        self.text(f"{path}.confirm", dialog.get("confirm"), 30, plain_only=True)
        self.text(f"{path}.deny", dialog.get("deny"), 30, plain_only=True)
        if dialog.get("style", "primary") not in STYLES:
            self.fail(path, f"style {dialog.get('style')!r}")

    def button(self, path: str, button: dict[str, Any]) -> None:
        self.text(f"{path}.text", button.get("text"), 75, plain_only=True)
        self.action_id(path, button)
        self.string(f"{path}.value", button.get("value"), 2000, required=False)
        if button.get("style", "primary") not in STYLES:
            self.fail(path, f"style {button.get('style')!r}")
        if "confirm" in button:
            self.confirm(f"{path}.confirm", button["confirm"])

    def static_select(self, path: str, select: dict[str, Any], *, own_id: bool = True) -> None:
        if own_id:
            self.action_id(path, select)
        options = select.get("options")
        if "option_groups" in select and options is not None:
            self.fail(path, "both options and option_groups")
        if not isinstance(options, list) or not 1 <= len(options) <= 100:
            self.fail(path, "options: 1 to 100 required")
            return
        values = [o.get("value") for o in options]
        if len(set(values)) != len(values):
            self.fail(path, "duplicate option values")
        for i, option in enumerate(options):
            self.text(f"{path}.options[{i}].text", option.get("text"), 75, plain_only=True)
            self.string(f"{path}.options[{i}].value", option.get("value"), 150)
        if "placeholder" in select:
            self.text(f"{path}.placeholder", select["placeholder"], 150, plain_only=True)
        initial = select.get("initial_options") or [select.get("initial_option")]
        if any(o is not None and o not in options for o in initial):
            self.fail(path, "an initial option is not one of the options")
        if "confirm" in select:
            self.confirm(f"{path}.confirm", select["confirm"])

    def option_group(self, path: str, element: dict[str, Any]) -> None:
        options = element.get("options")
        if not isinstance(options, list) or not 1 <= len(options) <= 10:
            self.fail(path, "options: 1 to 10 required")
            return
        for i, option in enumerate(options):
            self.text(f"{path}.options[{i}].text", option.get("text"), 75)
            self.string(f"{path}.options[{i}].value", option.get("value"), 150)
        initial = element.get("initial_option")
        if initial is not None and initial not in options:
            self.fail(path, "initial_option is not one of the options")

    def input_element(self, path: str, element: Any) -> None:
        if not isinstance(element, dict) or element.get("type") not in INPUT_ELEMENTS:
            self.fail(path, f"not an input element: {element!r:.80}")
            return
        self.action_id(path, element)
        kind = element["type"]
        if "placeholder" in element:
            self.text(f"{path}.placeholder", element["placeholder"], 150, plain_only=True)
        if kind == "plain_text_input":
            low, high = element.get("min_length", 0), element.get("max_length", 3000)
            if not 0 <= low <= high <= 3000:
                self.fail(path, f"min_length {low} / max_length {high}")
        elif kind == "number_input":
            if not isinstance(element.get("is_decimal_allowed"), bool):
                self.fail(path, "number_input needs is_decimal_allowed")
            low, high = element.get("min_value"), element.get("max_value")
            if low is not None and high is not None and float(low) > float(high):
                self.fail(path, "min_value > max_value")
        elif kind == "file_input":
            if not 1 <= element.get("max_files", 10) <= 10:
                self.fail(path, "max_files outside 1..10")
            filetypes = element.get("filetypes", [])
            if not all(
                isinstance(t, str) and t and "." not in t and "/" not in t for t in filetypes
            ):
                self.fail(path, f"filetypes must be bare extensions: {filetypes}")
        elif kind in ("static_select", "multi_static_select"):
            self.static_select(path, element, own_id=False)  # its action_id: checked above
        elif kind in ("radio_buttons", "checkboxes"):
            self.option_group(path, element)

    # -- blocks ---------------------------------------------------------------------------------

    def block(self, path: str, block: dict[str, Any], *, modal: bool) -> None:
        self.ids(path, block)
        kind = block.get("type")
        if kind == "section":
            self.section(path, block)
        elif kind == "header":
            self.text(f"{path}.text", block.get("text"), 150, plain_only=True)
        elif kind == "context":
            elements = block.get("elements", [])
            if not 1 <= len(elements) <= 10:
                self.fail(path, "context: 1 to 10 elements")
            for i, element in enumerate(elements):
                self.text(f"{path}.elements[{i}]", element, 3000)
        elif kind == "actions":
            self.actions(path, block)
        elif kind == "input":
            if not modal:
                self.fail(path, "input block in a message")
            self.text(f"{path}.label", block.get("label"), 2000, plain_only=True)
            if "hint" in block:
                self.text(f"{path}.hint", block["hint"], 2000, plain_only=True)
            self.input_element(f"{path}.element", block.get("element"))
        elif kind != "divider":
            self.fail(path, f"unexpected block type {kind!r}")

    def section(self, path: str, block: dict[str, Any]) -> None:
        if "text" not in block and "fields" not in block:
            self.fail(path, "section needs text or fields")
        if "text" in block:
            self.text(f"{path}.text", block["text"], 3000)
        fields = block.get("fields", [])
        if len(fields) > 10:
            self.fail(path, f"{len(fields)} fields > 10")
        for i, cell in enumerate(fields):
            self.text(f"{path}.fields[{i}]", cell, 2000)
        accessory = block.get("accessory")
        if isinstance(accessory, dict) and accessory.get("type") == "button":
            self.button(f"{path}.accessory", accessory)
        elif isinstance(accessory, dict) and accessory.get("type") == "static_select":
            self.static_select(f"{path}.accessory", accessory)

    def actions(self, path: str, block: dict[str, Any]) -> None:
        elements = block.get("elements", [])
        if not 1 <= len(elements) <= 25:
            self.fail(path, "actions: 1 to 25 elements")
        for i, element in enumerate(elements):
            where = f"{path}.elements[{i}]"
            if element.get("type") == "button":
                self.button(where, element)
            elif element.get("type") == "static_select":
                self.static_select(where, element)
            else:
                self.fail(where, f"unexpected element {element.get('type')!r}")
        if sum(e.get("style") == "primary" for e in elements) > 1:
            self.fail(path, "more than one primary button")

    def blocks(self, blocks: Any, limit: int, *, modal: bool) -> None:
        if not isinstance(blocks, list):
            self.fail("blocks", "not a list")
            return
        if len(blocks) > limit:
            self.fail("blocks", f"{len(blocks)} blocks > {limit}")
        for i, block in enumerate(blocks):
            self.block(f"blocks[{i}]", block, modal=modal)


def message_problems(text: str, blocks: list[dict[str, Any]]) -> list[str]:
    checker = _Checker()
    checker.string("text", text, MESSAGE_TEXT)
    checker.blocks(blocks, MESSAGE_BLOCKS, modal=False)
    return checker.problems


def modal_problems(view: dict[str, Any]) -> list[str]:
    checker = _Checker()
    if view.get("type") != "modal":
        checker.fail("type", "not a modal")
    checker.text("title", view.get("title"), 24, plain_only=True)
    for key in ("submit", "close"):
        if key in view:
            checker.text(key, view[key], 24, plain_only=True)
    checker.string("callback_id", view.get("callback_id"), 255, required=False)
    checker.string("private_metadata", view.get("private_metadata"), 3000, required=False)
    checker.blocks(view.get("blocks"), MODAL_BLOCKS, modal=True)
    has_input = any(b.get("type") == "input" for b in view.get("blocks") or [])
    if has_input and "submit" not in view:
        checker.fail("submit", "a modal with input blocks needs submit")
    return checker.problems


def assert_valid_message(text: str, blocks: list[dict[str, Any]]) -> None:
    problems = message_problems(text, blocks)
    assert not problems, "\n".join(problems)


def assert_valid_modal(view: dict[str, Any]) -> None:
    problems = modal_problems(view)
    assert not problems, "\n".join(problems)


def walk(node: Any) -> Iterator[Any]:
    """Every dict, list and scalar in a payload, depth first."""
    yield node
    if isinstance(node, dict):
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from walk(item)


def interactive_elements(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Everything a person can act on: any element with an action_id."""
    return [n for n in walk(blocks) if isinstance(n, dict) and "action_id" in n]


def strings(node: Any) -> list[str]:
    return [n for n in walk(node) if isinstance(n, str)]


# -- the conformance schemas (tests/conformance.py: tests/conformance_data) ------------------


@functools.cache
def _validator(path: Path) -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator(json.loads(path.read_text()))


def schema_available(name: str) -> bool:
    """Whether the schema is there (when HITL_CONFORMANCE_DIR is set and it is not, the test
    fails here: the schema was expected)."""
    return conformance_file(f"slack/{name}") is not None


def schema_problems(payload: dict[str, Any], name: str) -> list[str]:
    path = conformance_file(f"slack/{name}")
    assert path is not None, f"{name} not found in the conformance data"
    validator = _validator(path)
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}"
        for e in validator.iter_errors(payload)
    ]
