"""The chooser (adapters/surfaces/slack/messages.py `render_chooser`): which question a message
answers,
one button per request carrying the writer's words; within Block Kit's limits, inert, and read
back by `parse_block_action` as the answer it stands for."""

from __future__ import annotations

import json
from typing import Any

from adapters.surfaces.slack.messages import CHOOSER_SHOWN, render_chooser, render_chosen
from adapters.surfaces.slack.parse import parse_block_action
from adapters.surfaces.slack.text import BUTTON_VALUE, length
from bot.requests.kinds import Verb
from tests.adapters.surfaces.slack.blockkit_rules import assert_valid_message
from tests.adapters.surfaces.slack.updates import MARK, assert_inert
from tests.fakes.slack_signing import block_actions_payload

ALICE = "U0ALICE001"
REQUEST_ID = "7f0c2a4e9b1d4c3e8a6f5b2d1c0e9f8a"


def asked(n: int, question: str = "Which day for the release?") -> list[tuple[str, str]]:
    return [(f"{REQUEST_ID[:-2]}{i:02d}", f"{question} ({i})") for i in range(n)]


def buttons(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b["accessory"] for b in blocks if isinstance(b.get("accessory"), dict)]


def shown(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The blocks as a person sees them: the buttons' values (never shown) left out."""
    seen = json.loads(json.dumps(blocks))
    for block in seen:
        if isinstance(block.get("accessory"), dict):
            del block["accessory"]["value"]
    return list(seen)


def test_one_button_per_question_each_carrying_its_request_and_the_words() -> None:
    message = render_chooser(ALICE, "Thursday", asked(2))

    assert message is not None
    assert_valid_message(message.text, message.blocks)
    assert "Which day for the release? (1)" in json.dumps(message.blocks)
    values = [json.loads(b["value"]) for b in buttons(message.blocks)]
    assert values == [{"request": r, "by": ALICE, "text": "Thursday"} for r, _ in asked(2)]
    assert len({b["action_id"] for b in buttons(message.blocks)}) == 2


def test_written_words_and_questions_are_escaped() -> None:
    message = render_chooser(ALICE, MARK, asked(3, question=MARK))

    assert message is not None
    assert_valid_message(message.text, message.blocks)
    assert_inert([message.text, shown(message.blocks)])
    assert json.loads(buttons(message.blocks)[0]["value"])["text"] == MARK  # the words as sent


def test_many_questions_list_the_first_and_say_how_to_answer_the_rest() -> None:
    message = render_chooser(ALICE, "yes", asked(CHOOSER_SHOWN + 7))

    assert message is not None
    assert_valid_message(message.text, message.blocks)
    assert len(buttons(message.blocks)) == CHOOSER_SHOWN
    assert "…and 7 more" in json.dumps(message.blocks, ensure_ascii=False)


def test_words_too_long_for_a_buttons_value_are_not_carried() -> None:
    empty = {"request": asked(1)[0][0], "by": ALICE, "text": ""}
    room = BUTTON_VALUE - length(json.dumps(empty, separators=(",", ":")))
    fits = render_chooser(ALICE, "é" * room, asked(2))
    assert fits is not None
    assert all(length(b["value"]) <= BUTTON_VALUE for b in buttons(fits.blocks))
    assert render_chooser(ALICE, "é" * (room + 1), asked(2)) is None
    assert render_chooser(ALICE, "🙂" * (room // 2 + 1), asked(2)) is None  # UTF-16 counted


def test_a_click_reads_back_as_the_answer_with_the_words() -> None:
    message = render_chooser(ALICE, "Thursday", asked(2))
    assert message is not None
    posted = {"ts": "1700000000.000100", "text": message.text, "blocks": message.blocks}
    action = buttons(message.blocks)[1]["action_id"]

    payload = block_actions_payload(
        message=posted, channel_id="D0ALICE001", action_id=action, user_id="U0OTHER001"
    )

    click = parse_block_action(payload)

    assert click.author == ALICE
    assert click.interaction.request_id == asked(2)[1][0]
    assert click.interaction.user_id == "U0OTHER001"  # who clicked: the router checks them
    assert (click.interaction.verb, click.interaction.inputs) == (
        Verb.ANSWER, {"answer": "Thursday"}
    )  # fmt: skip


def test_the_answered_chooser_names_the_question_and_has_no_buttons() -> None:
    message = render_chosen(MARK)
    assert_valid_message(message.text, message.blocks)
    assert_inert([message.text, message.blocks])
    assert buttons(message.blocks) == []
