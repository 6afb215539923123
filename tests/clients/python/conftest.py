"""The real service with the fake Slack (tests/adapters/surfaces/slack/conftest.py), for the
client's
end-to-end tests."""

from tests.adapters.surfaces.slack.conftest import start_env

__all__ = ["start_env"]
