"""The directory: groups read through their prefix's source, cached briefly, one read shared by
concurrent lookups, and an unreadable group an error (never an empty group), asked again soon."""

from __future__ import annotations

import asyncio
import logging

import pytest

from bot.policies.directory import Directory, GroupUnreadable

OPS = "slack:S0OPSTEAM"
ENTRA = "entra:6f1c3f5e-0000-4000-8000-000000000001"
WAIT = 2.0  # upper bound for anything a test awaits; only a broken test ever reaches it


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Source:
    """A GroupSource whose groups, failures and calls the test controls."""

    def __init__(self, groups: dict[str, set[str]] | None = None) -> None:
        self.groups = groups or {}
        self.failures: list[Exception] = []  # raised by the next calls, in order
        self.calls: list[str] = []
        self.gate: asyncio.Event | None = None  # when set, calls wait for it

    async def members(self, group: str) -> frozenset[str]:
        self.calls.append(group)
        if self.gate is not None:
            await self.gate.wait()
        if self.failures:
            raise self.failures.pop(0)
        return frozenset(self.groups[group])


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def slack() -> Source:
    return Source({OPS: {"U0ALICE", "U0BOB"}})


@pytest.fixture
def directory(slack: Source, clock: Clock) -> Directory:
    return Directory({"slack:": slack}, clock=clock)


async def test_a_member_and_a_stranger(directory: Directory) -> None:
    assert await directory.is_member("U0ALICE", OPS)
    assert not await directory.is_member("U0MALLORY", OPS)


async def test_the_members_are_read_once_within_the_ttl(
    directory: Directory, slack: Source, clock: Clock
) -> None:
    assert await directory.is_member("U0ALICE", OPS)
    slack.groups[OPS] = {"U0BOB"}  # Alice left the group
    clock.now += 59.9
    assert await directory.is_member("U0ALICE", OPS)  # still as read a minute ago
    assert slack.calls == [OPS]


async def test_the_members_are_read_again_after_the_ttl(
    directory: Directory, slack: Source, clock: Clock
) -> None:
    assert await directory.is_member("U0ALICE", OPS)
    slack.groups[OPS] = {"U0BOB"}
    clock.now += 60
    assert not await directory.is_member("U0ALICE", OPS)
    assert slack.calls == [OPS, OPS]


async def test_concurrent_lookups_share_one_read(directory: Directory, slack: Source) -> None:
    slack.gate = asyncio.Event()
    users = ["U0ALICE", "U0BOB", "U0MALLORY"] * 3
    lookups = [asyncio.create_task(directory.is_member(user, OPS)) for user in users]
    await asyncio.sleep(0)  # every lookup has started and is waiting on the one read
    slack.gate.set()
    async with asyncio.timeout(WAIT):
        answers = await asyncio.gather(*lookups)
    assert answers == [True, True, False] * 3
    assert slack.calls == [OPS]


async def test_a_caller_that_goes_away_does_not_cancel_the_others_read(
    directory: Directory, slack: Source
) -> None:
    slack.gate = asyncio.Event()
    first = asyncio.create_task(directory.is_member("U0ALICE", OPS))
    second = asyncio.create_task(directory.is_member("U0BOB", OPS))
    await asyncio.sleep(0)
    first.cancel()
    slack.gate.set()
    async with asyncio.timeout(WAIT):
        assert await second
    assert first.cancelled()
    assert slack.calls == [OPS]


async def test_an_unreadable_group_raises_and_is_asked_again_soon(
    directory: Directory, slack: Source, clock: Clock
) -> None:
    slack.failures.append(GroupUnreadable(OPS, "Slack usergroups.users.list failed: fatal_error"))
    with pytest.raises(GroupUnreadable) as raised:
        await directory.is_member("U0ALICE", OPS)
    assert str(raised.value) == (
        f"the members of {OPS} cannot be read: Slack usergroups.users.list failed: fatal_error"
    )
    clock.now += 1  # the failure is remembered for a moment: a burst of clicks asks once
    with pytest.raises(GroupUnreadable, match="fatal_error"):
        await directory.is_member("U0ALICE", OPS)
    assert slack.calls == [OPS]
    clock.now += 4  # ... and only for a moment: Slack is asked again
    assert await directory.is_member("U0ALICE", OPS)
    assert slack.calls == [OPS, OPS]


async def test_an_unreadable_group_is_never_served_from_an_older_read(
    directory: Directory, slack: Source, clock: Clock
) -> None:
    assert await directory.is_member("U0ALICE", OPS)
    clock.now += 60
    slack.failures.append(GroupUnreadable(OPS, "missing_scope"))
    with pytest.raises(GroupUnreadable, match="missing_scope"):
        await directory.is_member("U0ALICE", OPS)


async def test_a_source_that_fails_unexpectedly_makes_the_group_unreadable(
    directory: Directory, slack: Source, caplog: pytest.LogCaptureFixture
) -> None:
    slack.failures.append(KeyError("a bug in the source"))
    failed = pytest.raises(GroupUnreadable, match=r"its source failed \(KeyError\)")
    with caplog.at_level(logging.ERROR, logger="bot.policies.directory"), failed:
        await directory.is_member("U0ALICE", OPS)
    assert f"reading the members of {OPS} failed" in caplog.text


async def test_an_unknown_prefix_is_refused(directory: Directory, slack: Source) -> None:
    assert directory.reads(OPS)
    assert not directory.reads("okta:00g1")
    with pytest.raises(GroupUnreadable, match=r"no source reads this prefix \(known: slack:\)"):
        await directory.is_member("U0ALICE", "okta:00g1")
    assert slack.calls == []


async def test_each_prefix_is_read_by_its_source(slack: Source, clock: Clock) -> None:
    entra = Source({ENTRA: {"aad-alice"}})
    directory = Directory({"slack:": slack, "entra:": entra}, clock=clock)
    assert await directory.is_member("aad-alice", ENTRA)
    assert await directory.is_member("U0BOB", OPS)
    assert (slack.calls, entra.calls) == ([OPS], [ENTRA])


def test_an_unreadable_group_is_said_in_one_line() -> None:
    error = GroupUnreadable(OPS, "Slack said:\n  no_such_subteam\r\n")
    assert str(error) == f"the members of {OPS} cannot be read: Slack said: no_such_subteam"
    assert (error.group, error.why) == (OPS, "Slack said: no_such_subteam")
