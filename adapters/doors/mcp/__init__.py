"""The MCP door (docs/api-and-mcp.md): "ask a human" tools and Claude Code's permission prompt,
served by `serve` over streamable HTTP at /mcp (server.py, its tools in tools.py) and by
`hitl-bridge mcp` over stdio as a proxy to a running `serve` (stdio.py)."""
