"""Which open request a person's message answers, for every surface that takes replies.

A message in reply to a request's own message (a Slack thread on it, a Teams reply to its
card) answers that request. Any other message in a conversation answers a request there only
when exactly one open request takes replies and may be answered by its writer; with several,
the writer is asked which (a surface shows each, and a choice answers it through the router
as any answer), and nothing settles until they choose. The oldest is never guessed: two
callers asking one person must each get the answer meant for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.records import RequestRecord
from bot.requests.kinds import Verb
from bot.requests.router import Interaction, Router

REPLY_INPUT = "answer"  # the answer form's one field (bot/requests/kinds.py `answer_form`)


@dataclass(frozen=True, slots=True)
class Answers:
    """The message answers `record`."""

    record: RequestRecord


@dataclass(frozen=True, slots=True)
class AskWhich:
    """The message could answer any of `records` (oldest first): ask the writer which."""

    records: tuple[RequestRecord, ...]


Reading = Answers | AskWhich | None
"""What a message is to the open requests: an answer to one, a choice to ask, or nothing."""


def read_reply(replied_to: Sequence[RequestRecord], here: Sequence[RequestRecord]) -> Reading:
    """What a message is, given the open requests it replies to (`replied_to`: those whose
    own message it is a reply to) and the others in its conversation (`here`), both already
    narrowed to those that take replies and its writer may answer (`answerable`)."""
    if replied_to:
        return Answers(replied_to[0])
    if len(here) == 1:
        return Answers(here[0])
    return AskWhich(tuple(here)) if here else None


async def answerable(
    router: Router, records: Sequence[RequestRecord], user_id: str, aliases: Sequence[str] = ()
) -> list[RequestRecord]:
    """Those of `records` a reply answers (a question) and `user_id` may answer; a request
    the writer may not answer is not one their chatting is taken for (nothing is audited)."""
    found = []
    for record in records:
        if router.takes_replies(record) and await router.may_answer(record, user_id, aliases):
            found.append(record)
    return found


async def reading_of(
    router: Router,
    user_id: str,
    *,
    replied_to: Sequence[RequestRecord],
    here: Sequence[RequestRecord],
    aliases: Sequence[str] = (),
) -> Reading:
    """`read_reply` of the open requests a surface found for a message of `user_id`'s."""
    mine = await answerable(router, replied_to, user_id, aliases)
    if mine:
        return Answers(mine[0])
    return read_reply((), await answerable(router, here, user_id, aliases))


def reply_interaction(
    request_id: str,
    user_id: str,
    text: str,
    *,
    surface: str,
    aliases: tuple[str, ...] = (),
    name: str | None = None,
) -> Interaction:
    """A message taken as the answer to a request: the words of a reply in its thread, or of
    a message the writer then chose the request for."""
    return Interaction(
        request_id, user_id, Verb.ANSWER, {REPLY_INPUT: text}, surface=surface, aliases=aliases,
        name=name,
    )  # fmt: skip
