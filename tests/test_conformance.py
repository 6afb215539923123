"""The conformance data (tests/conformance.py): when CI says it is there, it is."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance import ENV, FILES, VENDORED, conformance_file, expected


@pytest.mark.parametrize("relative", FILES)
def test_the_conformance_data_is_there_when_expected(relative: str) -> None:
    if not expected():
        pytest.skip(f"{ENV} is not set")
    assert conformance_file(relative) is not None  # else the test has failed already


def test_a_missing_folder_fails_rather_than_skips(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(ENV, str(tmp_path))
    with pytest.raises(pytest.fail.Exception, match="has no slack/blockkit-message"):
        conformance_file("slack/blockkit-message.schema.json")
    monkeypatch.setenv(ENV, f"{tmp_path}/absent")
    with pytest.raises(pytest.fail.Exception, match="is not a folder"):
        conformance_file("slack/blockkit-message.schema.json")


@pytest.mark.parametrize("relative", FILES)
def test_the_copy_in_the_repository_is_the_default(
    monkeypatch: pytest.MonkeyPatch, relative: str
) -> None:
    monkeypatch.delenv(ENV, raising=False)
    assert conformance_file(relative) == VENDORED / relative
