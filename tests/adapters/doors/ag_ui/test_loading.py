"""adapters/doors/ag_ui/loading.py: /ag-ui is mounted at once and its SDK loaded once `serve` is
ready (as the MCP and A2A doors'); a door that cannot start answers 503 in one line."""

from __future__ import annotations

import logging

import pytest

from adapters.doors.ag_ui import loading
from tests.adapters.doors.ag_ui.test_ag_ui import client_of
from tests.adapters.surfaces.slack.conftest import StartEnv


async def test_a_door_that_cannot_load_answers_503_with_retry_after_and_one_line(
    start_env: StartEnv, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(loading, "DOOR_MODULE", "adapters.doors.ag_ui.no_such_module")
    caplog.set_level(logging.INFO, logger=loading.__name__)
    client = await client_of(await start_env())
    for _ in range(2):
        headers = {"Authorization": f"Bearer {client.token}"}
        async with client.env.http.post(client.url, json={}, headers=headers) as response:
            assert response.status == 503 and response.headers["Retry-After"] == "5"
            assert await response.json() == {"error": "AG-UI is not running"}
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    said = "No module named 'adapters.doors.ag_ui.no_such_module'"
    assert errors == [f"AG-UI: the door did not start, /ag-ui answers 503: {said}"]
