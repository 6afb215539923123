"""The bridge: the core's composition root (root), the surfaces registered on it, the agent
turns people start, and people's names."""
