"""bot/doors/addresses.py: `to` strings read, or refused in one line naming what is wrong."""

from __future__ import annotations

import pytest

from bot.doors.addresses import Address, UnknownAddressError, read_address


@pytest.mark.parametrize(
    ("to", "read"),
    [
        ("slack:U0123ABCD", Address("slack", "U0123ABCD")),
        ("slack:C0123ABCD", Address("slack", "C0123ABCD")),
        ("slack:C0123ABCD/U0123ABCD", Address("slack", "C0123ABCD", "U0123ABCD")),
        ("slack:C0123ABCD@1712345678.000100",
         Address("slack", "C0123ABCD", None, "1712345678.000100")),
        ("slack:U0123ABCD@1712345678.000100",
         Address("slack", "U0123ABCD", None, "1712345678.000100")),
        ("teams:19:abc@thread.tacv2", Address("teams", "19:abc@thread.tacv2")),
        ("teams:a:1xyz/aad-0000-1", Address("teams", "a:1xyz", "aad-0000-1")),
        ("email:Alice@Example.com", Address("email", "alice@example.com")),
    ],
)  # fmt: skip
def test_an_address_is_read(to: str, read: Address) -> None:
    assert read_address(to) == read
    assert read_address(read.text) == read  # written back, it reads the same


@pytest.mark.parametrize(
    ("to", "said"),
    [
        ("U0123ABCD", "is not an address"),
        ("slack:", "is not an address"),
        ("slack:c0123abcd", "is not a Slack user or channel id"),
        ("slack:C0123ABCD/alice", "is not a Slack user or channel id"),
        ("slack:C0123ABCD@yesterday", "is not a Slack thread timestamp"),
        ("slack:U0123ABCD/U0456EFGH", "a user cannot be addressed within a user"),
        ("teams:\x1b[2Jx", "is not a Teams conversation id"),
        ("email:alice", "is not an e-mail address"),
        ("email:a@b@c.com", "is not an e-mail address"),
        ("fax:+123", "'fax' is not a surface"),
        ("slack:" + "C" * 600, "longer than 500"),
    ],
)
def test_what_is_no_address_is_refused_saying_why(to: str, said: str) -> None:
    with pytest.raises(UnknownAddressError, match=said):
        read_address(to)
