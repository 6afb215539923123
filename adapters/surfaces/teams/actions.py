"""`adaptiveCard/action` invoke values read back into the core's terms: an `Interaction`.

Pure functions, the inverse of the scheme of cards.py and inputs.py: the verb says which control
was used (`hitl_<Verb>`, or `hitl_refresh`), `data` carries the request id and, merged in by
Teams under their input ids, the values of the card's inputs. The values of the control's form
are read back by field name, in the forms `bot.human_tools.forms.read_form` takes; what they mean,
and whether they do, is the core's to say (`Router.handle`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from adapters.surfaces.teams.cards import REFRESH, REQUEST_ID_KEY, SURFACE, VERB_PREFIX
from adapters.surfaces.teams.inputs import DATE, LINK, NAME, OTHER, TIME, input_id
from adapters.surfaces.teams.text import MAX_REQUEST_ID
from bot.human_tools.forms import FieldKind, Form, FormField
from bot.requests.kinds import Verb
from bot.requests.router import Interaction


class ActionError(ValueError):
    """An invoke value that is not one of ours (another verb, no request id)."""


@dataclass(frozen=True, slots=True)
class CardAction:
    """One `Action.Execute` of our cards: which control (None: the refresh), for which
    request, and the values of the card's inputs by input id."""

    verb: Verb | None
    request_id: str
    trigger: str  # "manual" (a click) or "automatic" (a refresh Teams ran by itself)
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def refresh(self) -> bool:
        return self.verb is None


def parse_action(value: Mapping[str, Any] | None) -> CardAction:
    """The action in an `adaptiveCard/action` invoke's `activity.value`; ActionError when it is
    not one of ours."""
    action = value.get("action") if isinstance(value, Mapping) else None
    if not isinstance(action, Mapping):
        raise ActionError("the invoke value holds no action")
    if action.get("type", "Action.Execute") != "Action.Execute":
        raise ActionError(f"not an Action.Execute: {str(action.get('type'))[:40]!r}")
    verb = action.get("verb")
    if not isinstance(verb, str) or verb not in _VERBS:
        raise ActionError(f"not our verb: {str(verb)[:40]!r}")
    data = action.get("data")
    data = data if isinstance(data, Mapping) else {}
    request_id = data.get(REQUEST_ID_KEY)
    if not isinstance(request_id, str) or not 0 < len(request_id) <= MAX_REQUEST_ID:
        raise ActionError("the action carries no request id")
    inputs = {str(k): v for k, v in data.items() if k != REQUEST_ID_KEY and _scalar(v)}
    trigger = "automatic" if value and value.get("trigger") == "automatic" else "manual"
    return CardAction(_VERBS[verb], request_id, trigger, inputs)


_VERBS: dict[str, Verb | None] = {REFRESH: None, **{VERB_PREFIX + v.value: v for v in Verb}}


def _scalar(value: Any) -> bool:
    """What an input sends: a string, or a (finite) number; objects and nulls are none of ours."""
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, str | int)


def interaction(
    action: CardAction,
    form: Form | None,
    *,
    user_id: str,
    teams_user_id: str = "",
    name: str | None = None,
) -> Interaction:
    """What the person did, for the core's router: `user_id` is their AAD object id, and their
    Teams user id (`29:…`) is another id of theirs (a policy may name either)."""
    assert action.verb is not None, "a refresh is no interaction"
    return Interaction(
        request_id=action.request_id,
        user_id=user_id,
        verb=action.verb,
        inputs=form_inputs(form, action.data) if form is not None else {},
        submitted=True,  # a card's form is on the card: what it sends is the answer
        surface=SURFACE,
        aliases=(teams_user_id,) if teams_user_id and teams_user_id != user_id else (),
        name=name,
    )


# -- a form's values ---------------------------------------------------------------------------


def form_inputs(form: Form, data: Mapping[str, Any]) -> dict[str, Any]:
    """The values of `form`'s fields by name, from the inputs inputs.py drew: a toggle's
    "true"/"false", a multi-select's list, a datetime's date and time joined, a file link as a
    file. A field the person left empty is left out."""
    values: dict[str, Any] = {}
    for spec in form.fields:
        value = _value(form, spec, data)
        if value not in (None, "", []):
            values[spec.name] = value
    return values


def _value(form: Form, spec: FormField, data: Mapping[str, Any]) -> Any:
    own = input_id(form, spec)
    if spec.kind is FieldKind.DATETIME:
        day, hour = _text(data, f"{own}.{DATE}"), _text(data, f"{own}.{TIME}")
        return f"{day}T{hour}" if day or hour else None  # one without the other: invalid
    if spec.kind is FieldKind.FILE:
        return _file(_text(data, f"{own}.{LINK}"), _text(data, f"{own}.{NAME}"))
    if spec.kind is FieldKind.USER:
        return _text(data, f"{own}.{OTHER}") or _text(data, own)
    if spec.kind is FieldKind.CHOICES:
        return [item for item in _text(data, own).split(",") if item]
    raw = data.get(own)
    if spec.kind in (FieldKind.NUMBER, FieldKind.INTEGER) and isinstance(raw, int | float):
        return raw
    return _text(data, own)


def _text(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return value.strip() if isinstance(value, str) else ""


def _file(url: str, typed_name: str) -> dict[str, Any] | None:
    """A linked file as the core takes a file: Teams tells us nothing of its size (0), and its
    name is the one typed, else the link's last path segment."""
    if not url:
        return None
    return {"name": typed_name or _name_in(url), "url": url, "size": 0}


def _name_in(url: str) -> str:
    try:
        segments = [s for s in urlsplit(url).path.split("/") if s]
    except ValueError:
        return ""
    return unquote(segments[-1]).strip() if segments else ""
