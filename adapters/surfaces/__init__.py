"""Surfaces: where people are asked (Slack, Teams, the console)."""
