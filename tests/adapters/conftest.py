"""Fixtures the Slack and Teams end-to-end tests share."""

from tests.adapters.gated_tools import runs

__all__ = ["runs"]
