"""The A2A door: a person as an A2A agent (docs/api-and-mcp.md#a2a)."""
