"""Where the conformance data is: Slack's Block Kit and Teams' Adaptive Card schemas, which the
tests check what the bridge sends against.

A copy lives in tests/conformance_data (its README says where each file comes from, and under
which licence), so a fresh clone checks everything. `HITL_CONFORMANCE_DIR` names another folder
holding the same files (a newer copy, say); `.ci/run` sets it to the copy here, and set, the
data is expected: a file missing from it fails the test that wanted it instead of skipping it,
so a CI that lost the folder cannot pass by checking nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ENV = "HITL_CONFORMANCE_DIR"
ROOT = Path(__file__).resolve().parents[1]
VENDORED = ROOT / "tests" / "conformance_data"

FILES = (
    "slack/blockkit-message.schema.json",
    "slack/blockkit-modal.schema.json",
    "teams/adaptive-card-1.5.schema.json",
    "teams/bot-connector.swagger.json",
)


def expected() -> bool:
    """Whether the conformance data must be there (HITL_CONFORMANCE_DIR is set)."""
    return bool(os.environ.get(ENV))


def conformance_dir() -> Path | None:
    """The folder: HITL_CONFORMANCE_DIR (failing the test if it is not a folder), else the
    copy in tests/conformance_data if it is there, else None."""
    root = os.environ.get(ENV)
    if root:
        path = Path(root)
        if not path.is_dir():
            pytest.fail(f"{ENV}={root} is not a folder", pytrace=False)
        return path
    return VENDORED if VENDORED.is_dir() else None


def conformance_file(relative: str) -> Path | None:
    """A file of the conformance data (`slack/blockkit-message.schema.json`); None when there
    is no data. A file missing from data that is expected fails the test."""
    root = conformance_dir()
    if root is None:
        return None
    path = root / relative
    if path.is_file():
        return path
    if expected():
        pytest.fail(f"{ENV}={root} has no {relative}", pytrace=False)
    return None
