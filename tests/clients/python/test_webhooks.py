"""verify_webhook: a delivery signed by the bridge's own signer (adapters/doors/api/webhooks.py) is
read as the request it tells of; a tampered, re-signed, stale or unsigned one is refused."""

from __future__ import annotations

import functools
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from adapters.doors.api.webhooks import signature as bridges_signature
from hitl_client import WebhookSignatureError, verify_webhook

SECRET = "whsec_0123456789abcdef"
BODY = json.dumps({"id": "r1", "status": "answered", "to": "slack:U1", "tool": "requestApproval",
                   "answer": {"approved": True}, "answered_by": "U1"}).encode()  # fmt: skip


def signed(body: bytes = BODY, at: float | None = None, secret: str = SECRET) -> dict[str, str]:
    timestamp = str(int(time.time() if at is None else at))
    return {"X-Hitl-Timestamp": timestamp, "X-Hitl-Signature": bridges_signature(
        secret, timestamp, body), "X-Hitl-Delivery": "d1"}  # fmt: skip


def test_a_delivery_the_bridge_signed_is_the_request() -> None:
    request = verify_webhook(SECRET, signed(), BODY)
    assert (request.id, request.status, request.answer) == ("r1", "answered", {"approved": True})
    lower = {key.lower(): value for key, value in signed().items()}
    assert verify_webhook(SECRET, lower, BODY.decode()).id == "r1"  # any case, str or bytes


@pytest.mark.parametrize(
    ("headers", "body", "said"),
    [
        (signed(), BODY.replace(b"true", b"false"), "does not match"),
        (signed(secret="another secret"), BODY, "does not match"),
        (signed(at=time.time() - 3600), BODY, r"s off \(tolerance 300 s\)"),
        ({"X-Hitl-Signature": "sha256=00"}, BODY, "no X-Hitl-Timestamp"),
        ({}, BODY, "no X-Hitl-Timestamp or X-Hitl-Signature"),
    ],
    ids=["tampered", "another-secret", "stale", "no-timestamp", "unsigned"],
)
def test_what_the_bridge_did_not_sign_now_is_refused(
    headers: dict[str, str], body: bytes, said: str
) -> None:
    with pytest.raises(WebhookSignatureError, match=said):
        verify_webhook(SECRET, headers, body)


def test_a_signed_body_that_is_no_request_is_refused_too() -> None:
    with pytest.raises(WebhookSignatureError, match="not JSON"):
        verify_webhook(SECRET, signed(b"<html>"), b"<html>")


# The table both clients' tests read (clients/typescript/test/webhook_cases.test.ts too).
CASES = json.loads((Path(__file__).parents[1] / "webhook_cases.json").read_text())


def case_headers(case: dict[str, Any]) -> dict[str, str]:
    """The headers of `case`: {hex}/{HEX} in its signature replaced by the bridge's own."""
    timestamp, written = case["timestamp"], case["signature"]
    hexed = bridges_signature(CASES["secret"], timestamp or "", CASES["body"].encode())[7:]
    headers = {"X-Hitl-Timestamp": timestamp, "X-Hitl-Signature": written
               and written.replace("{hex}", hexed).replace("{HEX}", hexed.upper())}  # fmt: skip
    return {name: value for name, value in headers.items() if value is not None}


@pytest.mark.parametrize("case", CASES["cases"], ids=[case["name"] for case in CASES["cases"]])
def test_every_delivery_of_the_shared_table_is_verified_or_refused_as_it_says(
    case: dict[str, Any],
) -> None:
    verify = functools.partial(verify_webhook, CASES["secret"], case_headers(case), CASES["body"],
                               tolerance=CASES["tolerance"], now=CASES["now"])  # fmt: skip
    if case["refused"] is None:
        assert verify().id == "r1"
    else:
        with pytest.raises(WebhookSignatureError, match=re.escape(case["refused"])):
            verify()
