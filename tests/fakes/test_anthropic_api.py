"""The real `anthropic` SDK against FakeAnthropic: wire format, scripting, errors, validation."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import anthropic
import pytest
from anthropic import AsyncAnthropic
from anthropic.types import Message, MessageParam, ToolParam

from tests.fakes.anthropic_api import (
    FakeAnthropic,
    Turn,
    reply,
    reply_text,
    reply_tool_use,
    text_block,
    tool_use_block,
)

MODEL = "claude-sonnet-4-6"  # not in the SDK's DEPRECATED_MODELS (that warns)
TOOLS: list[ToolParam] = [
    {
        "name": name,
        "description": f"{name} tool",
        "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
    }
    for name in ("search", "ask_human")
]
HELLO: list[MessageParam] = [{"role": "user", "content": "hello"}]


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic() as f:
        yield f


def sdk(fake: FakeAnthropic, max_retries: int = 0, **kw: Any) -> AsyncAnthropic:
    return AsyncAnthropic(api_key="test", base_url=fake.base_url, max_retries=max_retries, **kw)


async def test_create_text(fake: FakeAnthropic) -> None:
    fake.script(reply_text("Hi there"))
    async with sdk(fake) as client:
        msg = await client.messages.create(
            model=MODEL, max_tokens=100, system="be brief", messages=HELLO
        )
    assert msg.content[0].type == "text" and msg.content[0].text == "Hi there"
    assert (msg.stop_reason, msg.model, msg.role) == ("end_turn", MODEL, "assistant")
    assert msg.id.startswith("msg_") and msg.usage.output_tokens > 0
    [req] = fake.requests
    assert req.body["system"] == "be brief" and req.body["model"] == MODEL
    assert req.headers["anthropic-version"] and "stream" not in req.body
    assert fake.pending == 0


async def test_create_parallel_tool_use(fake: FakeAnthropic) -> None:
    fake.script(
        reply(
            text_block("Let me check."),
            tool_use_block("search", {"q": "a"}, id="toolu_1"),
            tool_use_block("ask_human", {"q": "b"}, id="toolu_2"),
        )
    )
    async with sdk(fake) as client:
        msg = await client.messages.create(model=MODEL, max_tokens=100, tools=TOOLS, messages=HELLO)
    assert msg.stop_reason == "tool_use"
    uses = [b for b in msg.content if b.type == "tool_use"]
    assert [(u.id, u.name, u.input) for u in uses] == [
        ("toolu_1", "search", {"q": "a"}),
        ("toolu_2", "ask_human", {"q": "b"}),
    ]
    assert fake.requests[0].tool_names == ["search", "ask_human"]


async def test_stream_helper_assembles_tool_input(fake: FakeAnthropic) -> None:
    args = {"q": "a fairly long query so the JSON splits", "n": [1, 2, 3]}
    fake.script(reply(text_block("Searching now"), tool_use_block("search", args)))
    async with (
        sdk(fake) as client,
        client.messages.stream(model=MODEL, max_tokens=100, tools=TOOLS, messages=HELLO) as stream,
    ):
        texts = [t async for t in stream.text_stream]
        final = await stream.get_final_message()
    assert texts == ["Searching ", "now"]
    assert final.stop_reason == "tool_use"
    assert final.content[1].type == "tool_use" and final.content[1].input == args
    assert fake.requests[0].body["stream"] is True


async def test_raw_stream_tool_start_precedes_its_input(fake: FakeAnthropic) -> None:
    fake.script(reply_tool_use("search", {"q": "piecewise"}, id="toolu_x"))
    async with sdk(fake) as client:
        stream = await client.messages.create(
            model=MODEL, max_tokens=100, tools=TOOLS, messages=HELLO, stream=True
        )
        events = [e async for e in stream]
    kinds = [e.type for e in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    start = next(e for e in events if e.type == "content_block_start")
    assert start.content_block.type == "tool_use" and start.content_block.input == {}
    chunks = [
        e.delta.partial_json
        for e in events
        if e.type == "content_block_delta" and e.delta.type == "input_json_delta"
    ]
    assert len([c for c in chunks if c]) >= 2 and "".join(chunks) == '{"q": "piecewise"}'
    assert kinds.index("content_block_start") < kinds.index("content_block_delta")
    assert kinds.index("content_block_stop") > max(
        i for i, k in enumerate(kinds) if k == "content_block_delta"
    )
    delta = events[-2]
    assert delta.type == "message_delta" and delta.delta.stop_reason == "tool_use"


@pytest.mark.parametrize(
    ("status", "kind", "exc"),
    [
        (500, "api_error", anthropic.InternalServerError),
        (529, "overloaded_error", anthropic.OverloadedError),
        (429, "rate_limit_error", anthropic.RateLimitError),
    ],
)
async def test_error_raises_sdk_exception(
    fake: FakeAnthropic, status: int, kind: str, exc: type[anthropic.APIStatusError]
) -> None:
    fake.error(status, kind, "boom")
    async with sdk(fake) as client:
        with pytest.raises(exc) as info:
            await client.messages.create(model=MODEL, max_tokens=100, messages=HELLO)
    assert info.value.status_code == status and info.value.type == kind
    assert info.value.api_message == "boom"
    assert info.value.request_id is not None and info.value.request_id.startswith("req_")
    assert info.value.body == {
        "type": "error",
        "error": {"type": kind, "message": "boom"},
        "request_id": info.value.request_id,
    }


@pytest.mark.parametrize("status", [500, 529])
@pytest.mark.parametrize("streaming", [False, True])
async def test_sdk_retries_then_succeeds(fake: FakeAnthropic, status: int, streaming: bool) -> None:
    fake.error(status, "api_error" if status == 500 else "overloaded_error", "try later")
    fake.script(reply_text("second time lucky"))
    msg: Message
    async with sdk(fake, max_retries=1) as client:
        if streaming:
            async with client.messages.stream(model=MODEL, max_tokens=9, messages=HELLO) as s:
                msg = await s.get_final_message()
        else:
            msg = await client.messages.create(model=MODEL, max_tokens=9, messages=HELLO)
    assert msg.content[0].type == "text" and msg.content[0].text == "second time lucky"
    assert [r.headers.get("x-stainless-retry-count") for r in fake.requests] == ["0", "1"]


async def test_callable_turn_sees_tool_result(fake: FakeAnthropic) -> None:
    def echo(body: dict[str, Any]) -> Turn:
        [result] = body["messages"][-1]["content"]
        return reply_text(f"got {result['content']} error={result.get('is_error', False)}")

    fake.script(reply_tool_use("ask_human", {"q": "ok?"}, id="toolu_h"), echo)
    async with sdk(fake) as client:
        messages: list[MessageParam] = list(HELLO)
        first = await client.messages.create(
            model=MODEL, max_tokens=100, tools=TOOLS, messages=messages
        )
        messages += [
            first.to_param(),
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_h",
                        "content": "no",
                        "is_error": True,
                    }
                ],
            },
        ]
        second = await client.messages.create(
            model=MODEL, max_tokens=100, tools=TOOLS, messages=messages
        )
    assert second.content[0].type == "text" and second.content[0].text == "got no error=True"
    assert fake.requests[1].tool_results == [
        {"type": "tool_result", "tool_use_id": "toolu_h", "content": "no", "is_error": True}
    ]


@pytest.mark.parametrize(
    ("messages", "needle"),
    [
        (
            [
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": "toolu_a", "name": "search", "input": {}}
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_WRONG", "content": "x"}
                    ],
                },
            ],
            "messages.2.content.0: unexpected `tool_use_id`",
        ),
        (
            [
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": "toolu_a", "name": "search", "input": {}},
                        {"type": "tool_use", "id": "toolu_b", "name": "search", "input": {}},
                    ],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "toolu_a", "content": "x"}],
                },
            ],
            "without `tool_result` blocks immediately after: toolu_b",
        ),
        (
            [
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t", "content": ""}],
                }
            ],
            "messages.0.content.0: unexpected `tool_use_id`",
        ),
    ],
)
async def test_bad_transcript_rejected(
    fake: FakeAnthropic, messages: list[MessageParam], needle: str
) -> None:
    fake.script(reply_text("never served"))
    async with sdk(fake, max_retries=2) as client:
        with pytest.raises(anthropic.BadRequestError, match=needle) as info:
            await client.messages.create(model=MODEL, max_tokens=9, tools=TOOLS, messages=messages)
    assert info.value.type == "invalid_request_error"
    assert len(fake.requests) == 1 and fake.pending == 1  # not retried, turn not consumed


async def test_script_exhausted_fails_fast_despite_retries(fake: FakeAnthropic) -> None:
    async with sdk(fake, max_retries=2) as client:
        with pytest.raises(anthropic.InternalServerError, match="script ran out"):
            await client.messages.create(model=MODEL, max_tokens=9, messages=HELLO)
    assert len(fake.requests) == 1


async def test_scripted_tool_must_be_offered(fake: FakeAnthropic) -> None:
    fake.script(reply_tool_use("not_a_tool", {}))
    async with sdk(fake) as client:
        with pytest.raises(anthropic.InternalServerError, match="'not_a_tool' not in tools"):
            await client.messages.create(model=MODEL, max_tokens=9, tools=TOOLS, messages=HELLO)


async def test_auth_is_checked(fake: FakeAnthropic) -> None:
    async with sdk(fake, default_headers={"Authorization": anthropic.Omit()}) as client:
        with pytest.raises(anthropic.AuthenticationError, match="x-api-key header is required"):
            await client.messages.create(model=MODEL, max_tokens=9, messages=HELLO)
    async with FakeAnthropic(api_key="right") as strict, sdk(strict) as client:
        with pytest.raises(anthropic.AuthenticationError, match="invalid x-api-key"):
            await client.messages.create(model=MODEL, max_tokens=9, messages=HELLO)


async def test_raw_http_validation(fake: FakeAnthropic) -> None:
    headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
    async with aiohttp.ClientSession(fake.base_url, headers=headers) as http:
        async with http.post("/v1/messages", json={"model": MODEL, "messages": []}) as r:
            assert r.status == 400
            assert await r.json() == {
                "type": "error",
                "error": {"type": "invalid_request_error", "message": "max_tokens: Field required"},
                "request_id": r.headers["request-id"],
            }
        async with http.post("/v1/nope", json={}) as r:
            assert r.status == 404 and (await r.json())["error"]["type"] == "not_found_error"
        fake.script(reply_text("a b"))
        body = {"model": MODEL, "max_tokens": 5, "messages": HELLO, "stream": True}
        async with http.post("/v1/messages", json=body) as r:
            assert r.headers["content-type"].startswith("text/event-stream")
            raw = (await r.read()).decode()
    assert raw.startswith("event: message_start\ndata: {")
    assert "event: ping\ndata: {" in raw and raw.endswith(
        'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )


async def test_hold_keeps_stream_in_flight(fake: FakeAnthropic) -> None:
    hold = asyncio.Event()
    fake.script(reply_text("partial answer", delay=0.001, hold=hold))
    seen: list[str] = []
    blocks_done = asyncio.Event()
    async with (
        sdk(fake) as client,
        client.messages.stream(model=MODEL, max_tokens=9, messages=HELLO) as stream,
    ):

        async def consume() -> None:
            async for event in stream:
                seen.append(event.type)
                if event.type == "content_block_stop":
                    blocks_done.set()

        task = asyncio.create_task(consume())
        await asyncio.wait_for(blocks_done.wait(), 5)
        await asyncio.sleep(0.05)
        assert "message_delta" not in seen and not task.done()
        assert stream.current_message_snapshot.content[0].type == "text"
        assert stream.current_message_snapshot.content[0].text == "partial answer"
        hold.set()
        await task
    assert seen[-2:] == ["message_delta", "message_stop"]


async def test_client_cancel_mid_stream_is_seen(fake: FakeAnthropic) -> None:
    fake.script(reply_text("never finishes", hold=asyncio.Event()))
    async with sdk(fake) as client:
        stream = await client.messages.create(
            model=MODEL, max_tokens=9, messages=HELLO, stream=True
        )
        async for event in stream:
            if event.type == "content_block_stop":
                break
        await stream.close()
    for _ in range(200):
        if fake.aborted:
            break
        await asyncio.sleep(0.01)
    assert fake.aborted == 1
