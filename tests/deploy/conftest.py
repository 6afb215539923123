"""The real service on loopback, with the fake Slack and model behind it (tests/adapters/slack)."""

from tests.adapters.slack.conftest import env, start_env

__all__ = ["env", "start_env"]
