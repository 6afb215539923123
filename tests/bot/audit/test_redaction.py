"""Redaction of what the audit log keeps: keys in any case, at any depth, answers that are JSON."""

from __future__ import annotations

import json

from bot.audit.redaction import REDACTED, redact, redact_text, redaction_keys


def test_keys_are_compared_without_case_at_any_depth() -> None:
    keys = redaction_keys([" Password ", "API_KEY", ""], ["token"])
    assert keys == {"password", "api_key", "token"}
    arguments = {
        "user": "alice",
        "PASSWORD": "hunter2",
        "db": {"Api_Key": "k-123", "hosts": [{"token": "t-1", "name": "a"}, "plain"]},
        "count": 3,
    }
    assert redact(arguments, keys) == {
        "user": "alice",
        "PASSWORD": REDACTED,
        "db": {"Api_Key": REDACTED, "hosts": [{"token": REDACTED, "name": "a"}, "plain"]},
        "count": 3,
    }
    assert arguments["PASSWORD"] == "hunter2"  # the caller's arguments are left alone


def test_a_whole_value_is_redacted_whatever_it_holds() -> None:
    assert redact({"token": {"nested": ["a", "b"]}}, frozenset({"token"})) == {"token": REDACTED}


def test_no_keys_changes_nothing() -> None:
    value = {"password": "x"}
    assert redact(value, frozenset()) is value


def test_answers_that_are_json_are_redacted_and_others_kept() -> None:
    keys = frozenset({"password"})
    answer = json.dumps({"approved": True, "arguments": {"password": "s3cret", "env": "prod"}})
    kept = redact_text(answer, keys)
    assert kept is not None and "s3cret" not in kept
    shown = {"approved": True, "arguments": {"password": REDACTED, "env": "prod"}}
    assert json.loads(kept) == shown
    assert redact_text('{"env": "prod"}', keys) == '{"env": "prod"}'  # untouched: as written
    assert redact_text("password is s3cret", keys) == "password is s3cret"  # prose: no keys
    assert redact_text("{not json", keys) == "{not json"
    assert redact_text(None, keys) is None
