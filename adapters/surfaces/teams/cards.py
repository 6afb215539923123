"""Adaptive Cards 1.5 for requests: the core's view of a request (bot/requests/view.py) drawn.

Pure functions (no I/O) that return plain JSON dicts valid under the Adaptive Card
1.5 schema. The core decides what a request says; this module decides only how it looks on a
card: a heading, the facts (a fact without a label is body text, short ones a FactSet), the
status line, the answer, a container coloured by severity, and the live controls.

Only a live card (a pending request, for someone who may answer) has controls. The card posted
in the conversation is the read-only one; its `refresh.userIds` makes Teams fetch the live card
for the people who may answer (invokes.py).

Action scheme (what `actions.parse_action` reads back): every `Action.Execute` has the verb
`hitl_<Verb>` and data `{"request_id": <id>}`, nothing else; the refresh action is
`hitl_refresh`. A control that asks for a form is an `Action.ShowCard` holding the form's inputs
(inputs.py) and an `Action.Execute` that submits them; after invalid values the form is drawn in
the card's body instead, the person's values and the errors next to their fields.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from adapters.surfaces.teams.inputs import Element, Filled, Pick, Space, form_elements
from adapters.surfaces.teams.text import (
    CARD_BUDGET,
    FACT_TITLE,
    FACTS,
    FACTS_TEXT,
    FALLBACK_TEXT,
    MAX_REFRESH_USERS,
    MAX_REQUEST_ID,
    NOTE,
    TITLE,
    TeamsFormatter,
    byte_length,
    card_size,
    cut,
    plain_text,
    teams_text,
)
from bot.human_input import RenderState, RequestUpdate
from bot.human_tools.tool import HumanTool
from bot.requests.kinds import Control, Fact, Style, Verb
from bot.requests.view import RequestView, build_view
from bot.words.phrases import Phrase

Card = dict[str, Any]

SURFACE = "teams"  # the surface's name: audit lines and message references carry it
VERB_PREFIX = "hitl_"
REFRESH = "hitl_refresh"
REQUEST_ID_KEY = "request_id"
SCHEMA_URL = "http://adaptivecards.io/schemas/adaptive-card.json"
STATUS = "status"  # the id of the status line's TextBlock
SHORT_FACT = 80  # a fact's value up to this long, on one line, goes in a FactSet
_ICONS = {
    RenderState.IN_PROGRESS: "⏳ ",
    RenderState.COMPLETE: "✅ ",
    RenderState.REJECTED: "🚫 ",
    RenderState.EXPIRED: "⌛ ",
    RenderState.CANCELLED: "\u2796 ",  # heavy minus sign: withdrawn
    RenderState.UNDELIVERABLE: "\u26a0\ufe0f ",  # warning sign: never shown
}
_SEVERITY_STYLE = {"warning": "warning", "danger": "attention"}  # Container styles
_ACTION_STYLE = {Style.PRIMARY: "positive", Style.DANGER: "destructive"}


def verb_of(verb: Verb) -> str:
    """The `Action.Execute` verb of a control."""
    return VERB_PREFIX + verb.value


@dataclass(frozen=True, slots=True)
class Drawing:
    """How one card is drawn beyond its view: names and dates (`fmt`), who gets the live card
    by refresh, a notice for the person, and the form left open with their values and errors
    (`open`: the verb of the control whose form is drawn in the body)."""

    fmt: TeamsFormatter = field(default_factory=TeamsFormatter)
    refresh_user_ids: Sequence[str] = ()
    notice: Phrase | None = None
    open: Verb | None = None
    filled: Filled = field(default_factory=Filled)
    people: Sequence[Pick] = ()  # whom a person field offers


def render_card(
    update: RequestUpdate, tool: HumanTool | None = None, *, live: bool, drawing: Drawing
) -> Card:
    """The card for `update`: a tool's own "teams" renderer if it has one, else the core's view
    drawn. `live` (a pending request only): with the controls. A pending request's card gets the
    refresh clause for `drawing.refresh_user_ids`; the renderer's card too."""
    executing = update.state is RenderState.EXECUTING
    if executing:  # the only state whose actions carry the id
        check_request_id(update.pending_id)
    custom = tool.renderers.get("teams") if tool is not None else None
    if custom is not None:
        card: Card = dict(custom(update, live=live and executing))
    else:
        card = draw(build_view(update, tool, live=live and executing), drawing)
    refresh = refresh_clause(update.pending_id, drawing.refresh_user_ids) if executing else None
    if refresh is not None:
        card["refresh"] = refresh
    return card if custom is not None else within_budget(card)


def draw(view: RequestView, drawing: Drawing) -> Card:
    """The card of a view: heading and facts (in a container coloured by severity), the status
    line, the answer, the notice, then the controls."""
    fmt = drawing.fmt
    top = [_block(teams_text(view.title, TITLE), size="medium", weight="bolder", style="heading")]
    top += _facts(view.facts)
    style = _SEVERITY_STYLE.get(view.severity)
    body = [{"type": "Container", "style": style, "items": top}] if style else top
    body.append(_status(view, fmt))
    body += _facts(view.outcome)
    if drawing.notice is not None:
        body.append(_attention(drawing.notice.render(fmt)))
    inputs, actions = _controls(view, drawing)
    card: Card = {
        "type": "AdaptiveCard",
        "$schema": SCHEMA_URL,
        "version": "1.5",
        "fallbackText": _fallback(view, fmt),
        "body": body + inputs,
    }
    if actions:
        card["actions"] = actions
    return card


# -- text ------------------------------------------------------------------------------------


def _block(text: str, **props: Any) -> Element:
    """A TextBlock of safe text (already escaped, or ours)."""
    return {"type": "TextBlock", "text": text if text.strip() else "(empty)", "wrap": True, **props}


def _attention(text: str) -> Element:
    return _block("⚠️ " + cut(text, NOTE), color="attention", weight="bolder")


def _status(view: RequestView, fmt: TeamsFormatter) -> Element:
    line = _ICONS.get(view.state, "") + cut(view.status.render(fmt), NOTE)
    if view.state in (RenderState.EXECUTING, RenderState.IN_PROGRESS):
        return _block(line, id=STATUS, isSubtle=True, size="small")
    return _block(line, id=STATUS, weight="bolder")


def _fallback(view: RequestView, fmt: TeamsFormatter) -> str:
    """What a client without Adaptive Cards 1.5 shows instead of the card."""
    if view.state is RenderState.IN_PROGRESS:
        return cut(view.status.render(fmt), FALLBACK_TEXT)
    if view.state is RenderState.EXECUTING:
        return teams_text(f"{view.title}: {view.gist}", FALLBACK_TEXT)
    return cut(f"{teams_text(view.title, TITLE)}: {view.status.render(fmt)}", FALLBACK_TEXT)


def _facts(facts: Sequence[Fact]) -> list[Element]:
    """Facts in order: a fact without a label as body text, short ones gathered in FactSets,
    long ones as a bold label over their text; at most FACTS, sharing FACTS_TEXT."""
    shown = facts[:FACTS]
    values = _shares([teams_text(f.value, FACTS_TEXT) for f in shown], FACTS_TEXT)
    elements: list[Element] = []
    for fact, value in zip(shown, values, strict=True):
        short = len(fact.value) <= SHORT_FACT and "\n" not in fact.value
        if not fact.label:
            elements.append(_block(value))
        elif short:
            row = {"title": teams_text(fact.label, FACT_TITLE) or "(empty)", "value": value}
            if elements and elements[-1]["type"] == "FactSet":
                elements[-1]["facts"].append(row)
            else:
                elements.append({"type": "FactSet", "facts": [row]})
        else:
            elements.append(_block(teams_text(fact.label, FACT_TITLE), weight="bolder"))
            elements.append(_block(value, spacing="none"))
    if len(facts) > FACTS:
        elements.append(_block(f"…and {len(facts) - FACTS} more", isSubtle=True, size="small"))
    return elements


def _shares(texts: list[str], budget: int) -> list[str]:
    """`texts` cut to share `budget` bytes: the short ones whole, the rest alike."""
    cut_to = dict.fromkeys(range(len(texts)), budget)
    left = budget
    by_size = sorted(range(len(texts)), key=lambda i: byte_length(texts[i]))
    for done, i in enumerate(by_size):
        cut_to[i] = min(byte_length(texts[i]), left // (len(texts) - done))
        left -= cut_to[i]
    return [cut(text, cut_to[i]) for i, text in enumerate(texts)]


# -- controls --------------------------------------------------------------------------------


def _controls(view: RequestView, drawing: Drawing) -> tuple[list[Element], list[Element]]:
    """The inputs drawn in the body (the open form's) and the card's actions."""
    forms = [c.form for c in view.controls if c.form is not None and c.form.fields]
    room = Space.for_forms(forms, drawing.people)
    body: list[Element] = []
    actions: list[Element] = []
    for control in view.controls:
        form = control.form
        is_open = control.verb is drawing.open
        if form is not None and not form.fields:
            continue  # nothing to fill in: nothing it could send
        if form is None:
            if is_open:  # an answer the core refused, not any one field's fault
                body += [_attention(teams_text(m, NOTE)) for m in drawing.filled.errors.values()]
            actions.append(_confirming(view, control, drawing) if control.confirm else
                           _execute(view.request_id, control))  # fmt: skip
        elif is_open:
            filled, people = drawing.filled, drawing.people
            body += form_elements(form, filled=filled, room=room, people=people, required=False)
            actions.append(_execute(view.request_id, control, form.submit))
        else:
            inputs = form_elements(form, filled=Filled(), room=room, people=drawing.people)
            submit = _execute(view.request_id, control, form.submit)
            actions.append(_show_card(control, inputs, submit))
    return body, actions


def _execute(request_id: str, control: Control, title: str | None = None) -> Element:
    action: Element = {
        "type": "Action.Execute",
        "title": plain_text(title or control.label, TITLE),
        "verb": verb_of(control.verb),
        "data": {REQUEST_ID_KEY: request_id},
    }
    if control.style in _ACTION_STYLE:
        action["style"] = _ACTION_STYLE[control.style]
    return action


def _show_card(control: Control, body: list[Element], submit: Element) -> Element:
    action: Element = {
        "type": "Action.ShowCard",
        "title": plain_text(control.label, TITLE),
        "card": {"type": "AdaptiveCard", "body": body, "actions": [submit]},
    }
    if control.style in _ACTION_STYLE:
        action["style"] = _ACTION_STYLE[control.style]
    return action


def _confirming(view: RequestView, control: Control, drawing: Drawing) -> Element:
    """A control the core asks to confirm first: it opens the question and the control."""
    assert control.confirm is not None
    question = _block(cut(control.confirm.render(drawing.fmt), NOTE), weight="bolder")
    return _show_card(control, [question], _execute(view.request_id, control))


# -- the refresh clause ------------------------------------------------------------------------


def check_request_id(request_id: str) -> None:
    """Refuse an id no action could carry back (it is not model-written, so never cut)."""
    if not 0 < len(request_id) <= MAX_REQUEST_ID or request_id != request_id.strip():
        raise ValueError(f"unusable request id for Teams: {request_id[:40]!r}")


def refresh_clause(request_id: str, user_ids: Sequence[str]) -> Element | None:
    """`refresh`: Teams runs `hitl_refresh` for these users when they see the card and shows
    them the card we answer with (the live one, for those who may answer)."""
    unique = list(dict.fromkeys(u for u in user_ids if isinstance(u, str) and u))
    if not unique:
        return None
    return {
        "action": {"type": "Action.Execute", "verb": REFRESH, "data": {REQUEST_ID_KEY: request_id}},
        "userIds": unique[:MAX_REFRESH_USERS],
    }


# -- the size safety net -----------------------------------------------------------------------

# Every text above has its own budget, and together they fit CARD_BUDGET for the largest
# requests the core accepts. Requests it does not (arguments read tolerantly) and long refresh
# lists are what this is for: texts are cut further, structure, ids and values untouched.
_SHRINK_CAPS = (1_500, 750, 300, 100, 40, 16)


def within_budget(card: Card) -> Card:
    for cap in _SHRINK_CAPS:
        if card_size(card) <= CARD_BUDGET:
            break
        for node, key in _cuttable(card):
            node[key] = cut(node[key], cap)
    return card


def _cuttable(node: Any) -> Iterator[tuple[dict[str, Any], str]]:
    """Each text the safety net may cut: TextBlocks, facts, labels and choice titles, in the
    body, containers and shown cards (not the refresh clause, not a choice's value)."""
    if isinstance(node, list):
        for item in node:
            yield from _cuttable(item)
        return
    if not isinstance(node, dict):
        return
    kind = node.get("type")
    if kind == "TextBlock" and node.get("id") != STATUS:  # whom it is for, how it ended: kept
        yield node, "text"
    elif kind == "FactSet":
        for fact in node["facts"]:
            yield fact, "title"
            yield fact, "value"
    elif isinstance(kind, str) and kind.startswith("Input."):
        if "label" in node:
            yield node, "label"
        for choice in node.get("choices", ()):
            yield choice, "title"
    for key in ("body", "items", "actions", "card"):
        if key in node:
            yield from _cuttable(node[key])
