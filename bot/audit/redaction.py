"""Redaction of the audit log: values under secret keys never reach it.

The keys are HITL_AUDIT_REDACT's and every tool source's `redact` in the agent file, compared
without case, at any depth of arguments and of answers that are JSON. Applied before a row is
written (and so before it is hashed): the log keeps "[redacted]", never the value.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

REDACTED = "[redacted]"


def redaction_keys(*groups: Iterable[str]) -> frozenset[str]:
    """The keys of `groups` as redaction compares them (stripped, lower case)."""
    return frozenset(key.strip().lower() for group in groups for key in group if key.strip())


def redact(value: Any, keys: frozenset[str]) -> Any:
    """`value` with the value of every entry whose key is in `keys` replaced, at any depth."""
    if not keys:
        return value
    if isinstance(value, dict):
        return {
            k: REDACTED if str(k).lower() in keys else redact(v, keys) for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact(item, keys) for item in value]
    return value


def redact_text(text: str | None, keys: frozenset[str]) -> str | None:
    """An answer as the log keeps it: a JSON object or array redacted, other text as it is."""
    if not keys or text is None or text.lstrip()[:1] not in ("{", "["):
        return text
    try:
        parsed = json.loads(text)
    except ValueError:
        return text
    shown = redact(parsed, keys)
    return text if shown == parsed else json.dumps(shown, ensure_ascii=False)
