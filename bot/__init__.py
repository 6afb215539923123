"""hitl-bridge core: the human-input primitive, human tools, the agent loop and the store."""
