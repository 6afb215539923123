"""Where the conformance data is: Slack's and Teams' schemas (`../shared/conformance`, see
its README), which the tests check what the bridge sends against.

`HITL_CONFORMANCE_DIR` names the folder; `.ci/run` sets it. Set, the data is expected: a file
missing from it fails the test that wanted it instead of skipping it, so a CI that lost the
folder cannot pass by checking nothing. Unset, the folder beside the checkout is used when it
is there (a developer's machine); without it, the tests that need the data skip and the fakes
check what they can by themselves: the suite passes without it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ENV = "HITL_CONFORMANCE_DIR"
ROOT = Path(__file__).resolve().parents[1]
BESIDE = ROOT.parent / "shared" / "conformance"

FILES = (
    "slack/blockkit-message.schema.json",
    "slack/blockkit-modal.schema.json",
    "slack/web-api.openapi.json",
    "teams/adaptive-card-1.5.schema.json",
    "teams/bot-connector.swagger.json",
)


def expected() -> bool:
    """Whether the conformance data must be there (HITL_CONFORMANCE_DIR is set)."""
    return bool(os.environ.get(ENV))


def conformance_dir() -> Path | None:
    """The folder: HITL_CONFORMANCE_DIR (failing the test if it is not a folder), else the
    one beside the checkout if it exists, else None."""
    root = os.environ.get(ENV)
    if root:
        path = Path(root)
        if not path.is_dir():
            pytest.fail(f"{ENV}={root} is not a folder", pytrace=False)
        return path
    return BESIDE if BESIDE.is_dir() else None


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
