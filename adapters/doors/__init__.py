"""Doors: how agents reach the bridge (HTTP API, MCP, A2A, AG-UI, the admin console)."""
