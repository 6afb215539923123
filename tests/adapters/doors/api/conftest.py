"""The doors' tests run the service as the Slack end-to-end tests do (with the fake Slack)."""

from tests.adapters.surfaces.slack.conftest import start_env

__all__ = ["start_env"]
