"""Reading a request's arguments and answer for display, tolerantly.

A surface renders arguments that may be partial or invalid (a call still streaming in, or one
refused for its arguments), so these readers never raise: what cannot be shown is left out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.human_tools.tool import FieldType

Args = Mapping[str, Any]

_FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")  # DataField.name's pattern


def text_of(args: Args, key: str) -> str:
    """An argument as text ("" when absent; JSON for a value that is not a string)."""
    value = args.get(key)
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def texts_of(args: Args, key: str) -> list[str]:
    """A list argument as texts ([] when absent or not a list)."""
    value = args.get(key)
    if not isinstance(value, list):
        return []
    return [item if isinstance(item, str) else json.dumps(item) for item in value]


@dataclass(frozen=True, slots=True)
class ShownField:
    name: str
    label: str
    type: FieldType


def form_fields(args: Args) -> list[ShownField]:
    """collectUserData's fields that can be rendered: named validly, first of each name."""
    fields: list[ShownField] = []
    seen: set[str] = set()
    items = args.get("fields")
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        name, label, kind = item.get("name"), item.get("label"), item.get("type", "text")
        if not isinstance(name, str) or not _FIELD_NAME.match(name) or name in seen:
            continue
        seen.add(name)
        label = label if isinstance(label, str) and label.strip() else name
        field_type: FieldType = kind if kind in ("number", "email") else "text"
        fields.append(ShownField(name, label, field_type))
    return fields


def answer_of(result: str | None) -> Any:
    """The stored answer as JSON when it is JSON, else the raw text (a free-text tool)."""
    if result is None:
        return None
    try:
        return json.loads(result)
    except ValueError:
        return result
