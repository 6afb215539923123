"""Slack adapter."""
