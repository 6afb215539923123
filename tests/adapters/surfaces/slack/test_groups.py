"""Slack user groups read with `usergroups.users.list`: the real slack_sdk client against
FakeSlack on loopback."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from adapters.surfaces.slack.groups import SlackGroups
from bot.policies.directory import Directory, GroupUnreadable
from tests.fakes.slack_api import FakeSlack

OPS = "slack:S0OPSTEAM"
METHOD = "usergroups.users.list"


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(users={"U0ALICE": "alice", "U0BOB": "bob"}) as fake:
        fake.add_usergroup("S0OPSTEAM", ["U0ALICE", "U0BOB"])
        yield fake


@pytest.fixture
def groups(fake: FakeSlack) -> SlackGroups:
    return SlackGroups(AsyncWebClient(token=fake.token, base_url=fake.base_url))


async def test_the_members_are_read(fake: FakeSlack, groups: SlackGroups) -> None:
    assert await groups.members(OPS) == {"U0ALICE", "U0BOB"}
    assert [call["usergroup"] for call in fake.calls_to(METHOD)] == ["S0OPSTEAM"]


async def test_a_directory_reads_slack_groups(fake: FakeSlack, groups: SlackGroups) -> None:
    directory = Directory({"slack:": groups})
    assert await directory.is_member("U0ALICE", OPS)
    assert not await directory.is_member("U0MALLORY", OPS)
    assert len(fake.calls_to(METHOD)) == 1


async def test_an_unknown_group_is_unreadable_at_once(fake: FakeSlack, groups: SlackGroups) -> None:
    with pytest.raises(GroupUnreadable) as raised:
        await groups.members("slack:S0NOTHERE")
    assert str(raised.value) == (
        "the members of slack:S0NOTHERE cannot be read: "
        "Slack usergroups.users.list failed: no_such_subteam"
    )
    assert len(fake.calls_to(METHOD)) == 1  # not retried: no retry finds the group


async def test_a_missing_scope_is_unreadable(fake: FakeSlack, groups: SlackGroups) -> None:
    fake.fail(METHOD, "missing_scope")
    with pytest.raises(GroupUnreadable, match=r"usergroups\.users\.list failed: missing_scope$"):
        await groups.members(OPS)
    assert len(fake.calls_to(METHOD)) == 1


async def test_a_transient_error_is_retried(fake: FakeSlack, groups: SlackGroups) -> None:
    fake.fail(METHOD, "internal_error")
    assert await groups.members(OPS) == {"U0ALICE", "U0BOB"}
    assert len(fake.calls_to(METHOD)) == 2


@pytest.mark.slow  # the retries' backoff
async def test_slack_unreachable_is_unreadable() -> None:
    with socket.socket() as closed:  # a loopback port nobody listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    # Without the SDK's own retry of dropped connections: ours (calls.py) are enough here.
    client = AsyncWebClient(base_url=f"http://127.0.0.1:{port}/api/", retry_handlers=[])
    with pytest.raises(GroupUnreadable) as raised:
        await SlackGroups(client).members(OPS)
    assert str(raised.value).startswith(
        f"the members of {OPS} cannot be read: Slack usergroups.users.list failed: "
    )


async def test_a_principal_without_an_id_is_unreadable(
    fake: FakeSlack, groups: SlackGroups
) -> None:
    with pytest.raises(GroupUnreadable, match="no Slack user group id"):
        await groups.members("slack:")
    assert fake.calls_to(METHOD) == []
