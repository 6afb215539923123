"""The HTTP API door: /api/v1 (requests from any agent that speaks HTTP), and its webhooks."""
