"""The console's sessions, CSRF tokens, sign-in throttle and loopback test."""

from __future__ import annotations

import pytest

from adapters.doors.admin.auth import Sessions, SignInThrottle, is_loopback, same_secret


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_session_reads_back_until_it_expires() -> None:
    clock = Clock()
    sessions = Sessions(b"k" * 32, lifetime=60, clock=clock)
    session, cookie = sessions.issue("token:alice")
    assert sessions.read(cookie) == session and session.signed_in
    clock.now += 61
    assert sessions.read(cookie) is None


@pytest.mark.parametrize("cookie", [None, "", "x", "a.b", "a.b.c", "é.é", "x" * 2000])
def test_garbage_is_no_session(cookie: str | None) -> None:
    assert Sessions(b"k" * 32).read(cookie) is None


def test_a_forged_or_foreign_session_is_refused() -> None:
    ours, theirs = Sessions(b"k" * 32), Sessions(b"j" * 32)
    _, cookie = theirs.issue("token:mallory")
    assert ours.read(cookie) is None
    _, anonymous = ours.issue()
    signature = anonymous.split(".")[1]
    _, admin = ours.issue("token:alice")
    assert ours.read(f"{admin.split('.')[0]}.{signature}") is None  # a body with another's MAC


def test_csrf_tokens_are_per_session() -> None:
    sessions = Sessions(b"k" * 32)
    first, _ = sessions.issue()
    second, _ = sessions.issue()
    token = sessions.csrf(first)
    assert sessions.csrf_ok(first, token)
    assert not sessions.csrf_ok(second, token)
    assert not sessions.csrf_ok(first, "")
    assert not sessions.csrf_ok(None, token)
    assert not sessions.csrf_ok(first, token[:-1] + "0" if token[-1] != "0" else token[:-1] + "1")


def test_same_secret() -> None:
    assert same_secret("s3cret-admin-token", "s3cret-admin-token")
    assert not same_secret("s3cret-admin-token", "s3cret-admin-tokeN")
    assert not same_secret("", "x")


def test_the_throttle_counts_wrong_tokens_per_address_in_its_window() -> None:
    clock = Clock()
    throttle = SignInThrottle(limit=3, window=60, clock=clock)
    counted = [throttle.failed("10.0.0.1") for _ in range(6)]
    assert counted == [1, 2, 3, 4, 5, 5]  # 4: the first over the limit; 5: the ones after
    assert [throttle.over(n) for n in counted] == [False] * 3 + [True] * 3
    assert throttle.failed("10.0.0.2") == 1  # per address
    clock.now += 61
    assert throttle.failed("10.0.0.1") == 1  # the window passed


def test_the_throttle_forgets_the_stalest_address_past_its_bound() -> None:
    throttle = SignInThrottle(limit=1, addresses=2)
    for address in ("a", "b", "c"):
        throttle.failed(address)
    assert throttle.failed("a") == 1 and throttle.failed("c") == 2


@pytest.mark.parametrize(
    ("remote", "forwarded", "local"),
    [("127.0.0.1", False, True), ("::1", False, True), ("127.0.0.1", True, False),
     ("10.1.2.3", False, False), (None, False, False), ("nonsense", False, False)],
)  # fmt: skip
def test_is_loopback(remote: str | None, forwarded: bool, local: bool) -> None:
    assert is_loopback(remote, forwarded) is local
