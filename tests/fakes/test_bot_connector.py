"""The fake Bot Connector refuses the streamed messages Teams would refuse, and keeps the rest."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from tests.conformance import conformance_file
from tests.fakes.bot_connector import FakeBotConnector, activity_errors

PERSONAL = "a:1personal"
CHANNEL = "19:general@thread.tacv2"
JSON = dict[str, Any]


def piece(
    stream_type: str, sequence: int | None, stream_id: str | None = None, **more: Any
) -> JSON:
    info: JSON = {"type": "streaminfo", "streamType": stream_type}
    if sequence is not None:
        info["streamSequence"] = sequence
    if stream_id is not None:
        info["streamId"] = stream_id
    kind = "message" if stream_type == "final" else "typing"
    return {"type": kind, "text": "x", "entities": [info], **more}


@pytest.fixture
async def fake() -> AsyncIterator[FakeBotConnector]:
    async with FakeBotConnector(stream_interval=0.0) as connector:
        yield connector


async def send(
    fake: FakeBotConnector, body: JSON, conversation: str = PERSONAL
) -> tuple[int, JSON]:
    url = f"{fake.url}/v3/conversations/{conversation}/activities"
    async with aiohttp.ClientSession() as http, http.post(url, json=body) as response:
        return response.status, await response.json()


async def test_a_stream_is_kept_piece_by_piece(fake: FakeBotConnector) -> None:
    status, first = await send(fake, piece("informative", 1, text="Thinking…"))
    assert status == 201
    stream_id = first["id"]
    assert (await send(fake, piece("streaming", 2, stream_id, text="Hel")))[0] == 201
    assert (await send(fake, piece("final", None, stream_id, text="Hello")))[0] == 201
    (stream,) = fake.streams(PERSONAL)
    assert stream.texts("informative") == ["Thinking…"] and stream.texts() == ["Hel"]
    assert fake.activity(PERSONAL, stream_id)["text"] == "Hello"
    assert fake.refused == []


async def test_typing_is_an_indicator(fake: FakeBotConnector) -> None:
    assert (await send(fake, {"type": "typing"}, CHANNEL))[0] == 200
    assert fake.typing == [CHANNEL] and fake.streams(CHANNEL) == []


@pytest.mark.parametrize(
    ("pieces", "status"),
    [
        ([piece("informative", 2)], 400),  # a stream begins at 1
        ([piece("informative", 1), piece("streaming", 2)], 400),  # no streamId after the first
        ([piece("informative", 1), piece("streaming", 1, "ID")], 400),  # the sequence goes up
        ([piece("streaming", 1), piece("informative", 2, "ID")], 400),  # informative too late
        ([piece("informative", 1), piece("final", None, "ID", text="")], 400),  # no text
        ([piece("informative", 1), piece("final", None, "ID"), piece("streaming", 3, "ID")], 403),
        ([{"type": "message", "text": "x", "entities": [
            {"type": "streaminfo", "streamType": "streaming", "streamSequence": 1}]}], 400),
    ],
)  # fmt: skip
async def test_what_teams_refuses_is_refused(
    fake: FakeBotConnector, pieces: list[JSON], status: int
) -> None:
    stream_id = None
    answers = []
    for body in pieces:
        for entity in body["entities"]:
            if entity.get("streamId") == "ID":
                entity["streamId"] = stream_id
        answer, sent = await send(fake, body)
        answers.append(answer)
        stream_id = stream_id or sent.get("id")
    assert answers[-1] == status and len(fake.refused) == 1


async def test_streams_only_in_personal_chats(fake: FakeBotConnector) -> None:
    status, body = await send(fake, piece("informative", 1), CHANNEL)
    assert status == 403 and body["error"]["code"] == "ContentStreamNotAllowed"


async def test_pieces_too_close_together_are_throttled() -> None:
    async with FakeBotConnector(stream_interval=60.0) as fake:
        _, first = await send(fake, piece("informative", 1))
        status, _ = await send(fake, piece("streaming", 2, first["id"]))
    assert status == 429


def test_activities_are_checked_against_the_swagger_document() -> None:
    swagger = conformance_file("teams/bot-connector.swagger.json")
    if swagger is None:
        pytest.skip("no Bot Connector Swagger document")
    assert activity_errors({"type": "typing", "textFormat": "plain"}, swagger) == []
    assert activity_errors({"type": "typed", "textFormat": "rich", "colour": 1}, swagger) == [
        "unknown activity field 'colour'", "unknown activity type 'typed'",
        "unknown textFormat 'rich'",
    ]  # fmt: skip
