"""The `hitl-bridge` command line."""
