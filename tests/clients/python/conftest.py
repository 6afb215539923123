"""The real service with the fake Slack (tests/adapters/slack/conftest.py), for the client's
end-to-end tests."""

from tests.adapters.slack.conftest import start_env

__all__ = ["start_env"]
