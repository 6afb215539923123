"""Where the agent's tools come from, as its agent file names them: MCP servers (their tools,
and their elicitations asked of a person), Python callables, and the setup that composes them
behind the approval gates."""
