"""adapters/surfaces/slack/addresses.py: a door's addresses found with the real slack_sdk client
against
the FakeSlack on loopback, and kept a minute: the same address again costs no Web API call."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from adapters.surfaces.slack.addresses import TTL, SlackAddresses
from bot.doors.addresses import Addressee, UnknownAddressError, read_address
from tests.fakes.slack_api import FakeSlack

ALICE = "U0ALICE01"


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(users={ALICE: "alice"}) as fake:
        fake.users[ALICE]["profile"]["email"] = "alice@example.com"
        fake.channels.add("C0GENERAL1")
        yield fake


def calls(fake: FakeSlack) -> list[str]:
    return [method for method, _ in fake.calls if method != "auth.test"]


async def test_found_addresses_are_kept_a_minute(fake: FakeSlack) -> None:
    clock = Clock()
    addresses = SlackAddresses(AsyncWebClient(token=fake.token, base_url=fake.base_url),
                               clock=clock)  # fmt: skip
    channel = read_address(f"slack:C0GENERAL1/{ALICE}@1712345678.000100")
    for _ in range(3):
        assert await addresses.find(channel) == Addressee(
            "slack:C0GENERAL1:1712345678.000100", ALICE
        )
    by_email = read_address("email:alice@example.com")
    for _ in range(2):
        assert await addresses.find(by_email) == Addressee(f"slack:D{ALICE[1:]}:", ALICE)
    assert calls(fake) == ["conversations.info", "users.lookupByEmail", "conversations.open"]
    clock.now += TTL + 1
    await addresses.find(channel)
    assert calls(fake)[-1] == "conversations.info"


async def test_what_is_not_found_is_asked_again_and_said(fake: FakeSlack) -> None:
    addresses = SlackAddresses(AsyncWebClient(token=fake.token, base_url=fake.base_url))
    for _ in range(2):
        with pytest.raises(UnknownAddressError, match="no Slack user U0NOBODY1"):
            await addresses.find(read_address("slack:U0NOBODY1"))
    assert calls(fake) == ["conversations.open", "conversations.open"]
