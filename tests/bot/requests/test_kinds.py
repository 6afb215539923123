"""bot/requests/kinds.py: what surfaces rely on beyond what each surface's tests show."""

from __future__ import annotations

from pydantic import BaseModel

from bot.human_tools.forms import read_form
from bot.human_tools.tool import BUILTIN_TOOLS, HumanTool
from bot.requests.kind_of import kind_of
from bot.requests.kinds import OPTION_SHOWN, Verb


class Note(BaseModel):
    note: str


def test_a_reply_answers_a_custom_tool_with_one_text_field() -> None:
    """Every surface sends a conversation reply as {"answer": text}, whatever the answer
    model calls its text field."""
    kind = kind_of("takeNote", HumanTool("takeNote", "Take a note.", BaseModel, Note))
    assert kind.replies
    (answer, *_) = kind.controls({})
    assert answer.verb is Verb.ANSWER and answer.form is not None
    inputs = {"answer": "remember the milk"}
    values = read_form(answer.form, inputs).values
    assert kind.answer(Verb.ANSWER, values, inputs, {}) == {"note": "remember the milk"}


def test_options_are_listed_in_full_when_a_numbered_label_would_be_cut() -> None:
    select = kind_of("selectOption", BUILTIN_TOOLS["selectOption"])
    just_fits = "x" * (OPTION_SHOWN - 3)  # "1. " + the option: exactly the control's width
    too_long = "x" * (OPTION_SHOWN - 2)  # one more: the control would cut it
    assert [f.label for f in select.facts({"question": "q", "options": [just_fits]})] == [""]
    assert "Options" in [f.label for f in select.facts({"question": "q", "options": [too_long]})]
