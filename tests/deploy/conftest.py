"""The real service on loopback, with the fake Slack and model behind it
(tests/adapters/surfaces/slack)."""

from tests.adapters.surfaces.slack.conftest import env, start_env

__all__ = ["env", "start_env"]
