"""manifest.yml declares exactly what the app uses: its events, scopes and endpoints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from adapters.surfaces.slack.app import SLASH_COMMAND

MANIFEST = Path(__file__).resolve().parents[4] / "manifest.yml"


def manifest() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(MANIFEST.read_text())
    return loaded


def test_it_subscribes_to_the_events_the_app_handles() -> None:
    events = manifest()["settings"]["event_subscriptions"]
    assert set(events["bot_events"]) == {
        "app_home_opened", "app_mention", "message.channels", "message.groups", "message.im",
        "assistant_thread_started", "assistant_thread_context_changed",
    }  # fmt: skip
    assert events["request_url"].endswith("/slack/events")


def test_interactivity_and_the_command_share_the_one_endpoint() -> None:
    data = manifest()
    assert data["settings"]["interactivity"] == {
        "is_enabled": True,
        "request_url": data["settings"]["event_subscriptions"]["request_url"],
    }
    [command] = data["features"]["slash_commands"]
    assert command["command"] == SLASH_COMMAND
    assert command["url"].endswith("/slack/events")


def test_it_asks_for_the_scopes_it_uses_and_no_more() -> None:
    scopes = set(manifest()["oauth_config"]["scopes"]["bot"])
    assert scopes == {
        "app_mentions:read", "channels:history", "groups:history", "im:history",
        "chat:write", "commands", "files:read",
        # the doors (bot/doors/service.py): a DM, a user by e-mail, a channel's existence
        "im:write", "users:read", "users:read.email", "channels:read", "groups:read",
        "usergroups:read",  # a policy's approvers may be a user group
        "assistant:write",  # the assistant view's prompts, titles and status lines
    }  # fmt: skip


def test_socket_mode_is_off_by_default() -> None:
    assert manifest()["settings"]["socket_mode_enabled"] is False


def test_the_command_lists_every_subcommand_and_mentions_arrive_as_ids() -> None:
    [command] = manifest()["features"]["slash_commands"]
    for word in ("pending", "mine", "grants", "revoke", "audit", "cancel"):
        assert word in command["usage_hint"]
    assert len(command["usage_hint"]) <= 1000 and len(command["description"]) <= 100
    assert (
        command["should_escape"] is True
    )  # adapters/surfaces/slack/app.py command_words reads them


def test_the_home_tab_is_on() -> None:
    assert manifest()["features"]["app_home"]["home_tab_enabled"] is True


def test_the_assistant_view_is_on_and_described() -> None:
    view = manifest()["features"]["assistant_view"]
    assert 0 < len(view["assistant_description"]) <= 200
    assert "suggested_prompts" not in view  # set per thread, from the agent file
