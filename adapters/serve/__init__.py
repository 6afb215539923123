"""The `serve` composition: settings, start-up, readiness, the HTTP server."""
