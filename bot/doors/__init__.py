"""Doors: requests asked from outside the agent loop (the HTTP API, the MCP server): the service
both share, the bearer tokens, who a request is addressed to, the long polls held open."""
