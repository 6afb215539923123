"""The AG-UI door: the bridge's agent run over AG-UI (`POST /ag-ui`), its human tools as
interrupts (docs/api-and-mcp.md#ag-ui)."""
