"""What the approval request of a gated tool call holds, and what its answer may say. Pure.

A gated call (bot/gates/gate.py) becomes a request of the reserved human tool
`approveToolCall`, whose arguments are what people are shown: the tool, its description, the
call's arguments with the rule's redacted keys masked (the real values stay with the call,
never in the request), and the schema of what the Edit form may change (the tool's input
schema without the masked arguments: a secret is neither shown nor edited). Its answer is
`{"approved": true}`, `{"approved": true, "grant": true}` (approve, and allow the tool here for
a while) or `{"approved": true, "arguments": {...}}` (the edited arguments, checked against
that schema), with `"approved_by": [...]` when several people's approvals were needed; a
person's "no" is a Decline. How the request looks is its kind in
bot/requests/kinds.py.

A request a door makes for another agent's tool (bot/doors/service.py) may offer two more
choices, each only where that agent can act on it: a grant kept by the agent itself (`"grant":
{"rule": "Bash(npm test:*)"}`: approve, and let the agent allow what the rule covers for the
rest of its session) instead of one of ours, and "decline and stop" (`"stop": true`: decline,
and ask the agent to stop what it is doing; bot/requests/wording.py `stop_reason`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema
from jsonschema.exceptions import SchemaError

from bot.errors import AnswerInvalidError
from bot.words.phrases import listed
from bot.words.tool_names import GATE_TOOL

MASK = "•••"
FOLD = 300  # characters of an argument's value shown before the rest is folded
CHANGE_SHOWN = 80  # characters of each side of an edit's change


# -- the request -------------------------------------------------------------------------------


def redacted(value: Any, keys: Iterable[str]) -> Any:
    """`value` with every entry named in `keys` masked, at any depth."""
    names = frozenset(keys)
    if not names:
        return value

    def mask(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: MASK if k in names else mask(v) for k, v in node.items()}
        if isinstance(node, list):
            return [mask(item) for item in node]
        return node

    return mask(value)


def request_arguments(
    *,
    tool: str,
    description: str,
    schema: Mapping[str, Any],
    arguments: Mapping[str, Any],
    redact: Iterable[str],
    grant_seconds: float | None,
    grant_rule: str | None = None,
    stop: bool = False,
) -> dict[str, Any]:
    """The approval request's arguments for a call of `tool` (see the module's docstring);
    `grant_seconds` offers "approve and allow here" for that long (None: not offered), or
    `grant_rule` offers the agent's own grant of that rule for its session; `stop` offers
    "decline and stop"."""
    shown = redacted(dict(arguments), redact)
    locked = sorted(key for key in arguments if shown[key] != arguments[key])
    properties = schema.get("properties")
    declared = list(properties) if isinstance(properties, Mapping) else []
    request: dict[str, Any] = {
        "tool": tool,
        "description": description,
        "arguments": shown,
        "schema": editable_schema(schema, locked),
        # The order arguments are shown and fields asked in: the schema's, then the call's
        # other keys (a JSONB column keeps no key order).
        "order": [*declared, *(key for key in arguments if key not in declared)],
    }
    if locked:
        request["redacted"] = locked
    if grant_seconds is not None and grant_seconds > 0:
        request["grant"] = {"seconds": grant_seconds}
    elif grant_rule:
        request["grant"] = {"rule": grant_rule}
    if stop:
        request["stop"] = True
    return request


def editable_schema(schema: Mapping[str, Any], locked: Iterable[str]) -> dict[str, Any]:
    """The tool's input schema without the `locked` properties (nor their requirement)."""
    gone = set(locked)
    edited = dict(schema)
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        edited["properties"] = {k: v for k, v in properties.items() if k not in gone}
    required = schema.get("required")
    if isinstance(required, list):
        edited["required"] = [k for k in required if k not in gone]
    return edited


@dataclass(frozen=True, slots=True)
class GateRequest:
    """An approval request's arguments, read tolerantly (a view must never raise)."""

    tool: str
    description: str
    arguments: dict[str, Any]
    schema: dict[str, Any]
    grant_seconds: float | None = None
    redacted: tuple[str, ...] = ()
    grant_rule: str | None = None  # the agent's own grant, for its session (a door's request)
    stop: bool = False  # "decline and stop" is offered

    @property
    def editable(self) -> frozenset[str]:
        """The arguments the Edit form may change (the schema's properties)."""
        properties = self.schema.get("properties")
        return frozenset(properties) if isinstance(properties, Mapping) else frozenset()


def read_request(args: Mapping[str, Any]) -> GateRequest:
    def mapping(key: str) -> dict[str, Any]:
        value = args.get(key)
        return dict(value) if isinstance(value, Mapping) else {}

    grant = mapping("grant").get("seconds")
    rule = mapping("grant").get("rule")
    seconds = float(grant) if isinstance(grant, int | float) and not isinstance(grant, bool) else 0
    locked = args.get("redacted")
    order = args.get("order")
    rank = {str(k): i for i, k in enumerate(order)} if isinstance(order, list) else {}
    schema = mapping("schema")
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        schema["properties"] = _ordered(properties, rank)
    return GateRequest(
        tool=str(args.get("tool") or ""),
        description=str(args.get("description") or ""),
        arguments=_ordered(mapping("arguments"), rank),
        schema=schema,
        grant_seconds=seconds if math.isfinite(seconds) and seconds > 0 else None,
        redacted=tuple(str(k) for k in locked) if isinstance(locked, list) else (),
        grant_rule=rule if isinstance(rule, str) and rule else None,
        stop=args.get("stop") is True,
    )


def _ordered(mapping: Mapping[str, Any], rank: Mapping[str, int]) -> dict[str, Any]:
    """`mapping` in the request's order (keys it does not rank last, as they come)."""
    last = len(rank)
    return dict(sorted(mapping.items(), key=lambda item: rank.get(item[0], last)))


# -- showing values ----------------------------------------------------------------------------


def fold(text: str, limit: int = FOLD) -> str:
    """`text`, or its first `limit` characters and how many more were folded away."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… (+{len(text) - limit:,} characters)"


def shown_value(value: Any, limit: int = FOLD) -> str:
    """An argument as a person reads it: text as written (`""` when empty), anything else as
    JSON; folded past `limit` characters."""
    if isinstance(value, str):
        return fold(value, limit) if value else '""'
    return fold(json.dumps(value, ensure_ascii=False), limit)


def duration(seconds: float) -> str:
    """`3600` -> "1 hour", `5400` -> "90 minutes", `45` -> "45 seconds"."""
    whole = round(seconds)
    for size, unit in ((86400, "day"), (3600, "hour"), (60, "minute")):
        if whole >= size and whole % size == 0:
            count = whole // size
            return f"{count} {unit}" + ("" if count == 1 else "s")
    if whole >= 60:
        minutes = round(whole / 60)
        return f"{minutes} minute" + ("" if minutes == 1 else "s")
    return f"{whole} second" + ("" if whole == 1 else "s")


# -- the answer --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Approval:
    """An approval: plain, with a grant, or with edited arguments; `approved_by` names who
    approved when the policy needed several approvals (bot/policies/tally.py)."""

    grant: bool = False
    arguments: dict[str, Any] | None = None
    approved_by: tuple[str, ...] = ()

    def answer(self) -> dict[str, Any]:
        answer: dict[str, Any] = {"approved": True}
        if self.grant:
            answer["grant"] = True
        if self.arguments is not None:
            answer["arguments"] = self.arguments
        if self.approved_by:
            answer["approved_by"] = list(self.approved_by)
        return answer


def approved_line(approved_by: tuple[str, ...]) -> str | None:
    """The line the model reads above the result of a call several people approved."""
    return f"Approved by {listed(approved_by)}." if approved_by else None


def read_decision(answer: Any) -> Approval:
    """The decision an answer (its JSON, or the JSON read) holds; ValueError saying what is
    wrong with one that is not an approval."""
    if isinstance(answer, str):
        try:
            answer = json.loads(answer)
        except ValueError:
            raise ValueError("the answer is not JSON") from None
    if not isinstance(answer, dict) or answer.get("approved") is not True:
        raise ValueError('an approval is {"approved": true}; decline a call instead')
    unknown = set(answer) - {"approved", "grant", "arguments", "approved_by"}
    if unknown:
        raise ValueError(f"unknown keys in the answer: {', '.join(sorted(unknown))}")
    grant = answer.get("grant", False)
    if not isinstance(grant, bool):
        raise ValueError("grant is true or false")
    edited = answer.get("arguments")
    if edited is not None and not isinstance(edited, dict):
        raise ValueError("arguments is an object")
    if grant and edited is not None:
        raise ValueError("an edited call is approved once, without a grant")
    voters = answer.get("approved_by", [])
    if not isinstance(voters, list) or not all(isinstance(v, str) and v for v in voters):
        raise ValueError("approved_by is a list of who approved")
    return Approval(grant=grant, arguments=edited, approved_by=tuple(voters))


def edit_errors(schema: Mapping[str, Any], arguments: Any) -> dict[str, str]:
    """What is wrong with edited `arguments` under `schema`, by argument ("" for the whole)."""
    try:
        validator_class = jsonschema.validators.validator_for(schema)
        validator_class.check_schema(dict(schema))
        validator = validator_class(dict(schema))
    except SchemaError as err:
        return {"": f"the tool's input schema is not valid: {err.message}"}
    errors: dict[str, str] = {}
    for error in validator.iter_errors(arguments):
        path = list(error.absolute_path)
        if path:
            errors.setdefault(str(path[0]), error.message)
        elif error.validator == "required" and isinstance(error.validator_value, list):
            for key in error.validator_value:
                if isinstance(arguments, dict) and key not in arguments:
                    errors.setdefault(str(key), "Required")
        else:
            errors.setdefault("", error.message)
    return errors


def check_answer(args: Mapping[str, Any], answer: str) -> str:
    """The handler's validator of answers to `approveToolCall` (set by the gate): the answer
    as stored, or AnswerInvalidError with what is wrong, by argument."""
    try:
        decision = read_decision(answer)
    except ValueError as err:
        message = f"Invalid answer for '{GATE_TOOL}': {err}"
        raise AnswerInvalidError(message, {"": str(err)}) from None
    if decision.arguments is not None:
        errors = edit_errors(read_request(args).schema, decision.arguments)
        if errors:
            detail = "; ".join(f"{k or 'arguments'}: {v}" for k, v in errors.items())
            raise AnswerInvalidError(f"Invalid edit for '{GATE_TOOL}': {detail}", errors)
    return json.dumps(decision.answer(), ensure_ascii=False)


def check_default(args: Mapping[str, Any], answer: str) -> str:
    """The handler's check of a policy's default answer to `approveToolCall` at the deadline
    (`on_timeout: {answer: ...}`): an approval as `check_answer` reads it, or a decline,
    `{"approved": false}` with an optional `reason`, which a person would give by declining."""
    try:
        parsed = json.loads(answer)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and parsed.get("approved") is False:
        reason = parsed.get("reason")
        if set(parsed) - {"approved", "reason"} or not isinstance(reason, str | None):
            raise AnswerInvalidError(f"Invalid default for '{GATE_TOOL}': a decline is "
                                     '{"approved": false, "reason": "..."}')  # fmt: skip
        return json.dumps(parsed, ensure_ascii=False)
    return check_answer(args, answer)


def declined_by_default(answer: str) -> str | None:
    """The reason of a default answer that declines (`check_default`'s), "" for none; None
    for an approval."""
    parsed = json.loads(answer)
    if isinstance(parsed, dict) and parsed.get("approved") is False:
        return str(parsed.get("reason") or "")
    return None


def typed_edit(schema: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """A form's values as the tool takes them: a choice of a non-text enum (a form carries
    every option as text) back to the enum's own value."""
    properties = schema.get("properties")
    typed = dict(values)
    for key, value in values.items():
        spec = properties.get(key) if isinstance(properties, Mapping) else None
        if not isinstance(spec, Mapping):
            continue
        items = spec.get("items")
        if isinstance(value, list) and isinstance(items, Mapping):
            typed[key] = [_enum_value(items, v) for v in value]
        else:
            typed[key] = _enum_value(spec, value)
    return typed


def _enum_value(spec: Mapping[str, Any], value: Any) -> Any:
    enum = spec.get("enum")
    if not isinstance(value, str) or not isinstance(enum, list) or value in enum:
        return value
    return next((item for item in enum if str(item) == value), value)


# -- an edit, as people and the model read it ---------------------------------------------------

_ABSENT = object()


def edit_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """Each argument an edit changed, as `key: "old" → "new"` (`(none)` for one added or
    removed), in the call's order then the edit's."""
    changes = []
    for key in dict.fromkeys([*before, *after]):
        old, new = before.get(key, _ABSENT), after.get(key, _ABSENT)
        if _same(old, new):
            continue
        changes.append(f"{key}: {_side(old)} → {_side(new)}")
    return changes


def edit_line(by: str | None, changes: list[str]) -> str:
    """The line the model reads above the result of an edited call."""
    who = f"Edited by {by}" if by else "Edited"
    return f"{who}: {'; '.join(changes)}" if changes else f"{who}: approved without changes"


def _side(value: Any) -> str:
    if value is _ABSENT:
        return "(none)"
    return fold(json.dumps(value, ensure_ascii=False), CHANGE_SHOWN)


def _same(a: Any, b: Any) -> bool:
    if a is _ABSENT or b is _ABSENT:
        return a is b
    return json.dumps(_plain(a), sort_keys=True) == json.dumps(_plain(b), sort_keys=True)


def _plain(value: Any) -> Any:
    """Whole floats as ints (a form gives 3 for 3.0), recursively."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
