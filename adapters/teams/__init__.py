"""Microsoft Teams adapter."""
