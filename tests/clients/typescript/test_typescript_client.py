"""hitl-client for TypeScript (clients/typescript): its generated types are the server's OpenAPI
document's, and its Node tests (`node --test`, clients/typescript/test/) pass against the real
`hitl-bridge serve`, a person in the fake Slack answering (tests/clients/typescript/node.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from adapters.doors.api.openapi import openapi_document
from tests.clients.typescript.node import (
    NODE_TIMEOUT,
    PACKAGE,
    build,
    exclusive,
    node,
    npm_ready,
    service,
)

pytestmark = pytest.mark.subprocess

# How `npm run generate` runs openapi-typescript (clients/typescript/package.json).
GENERATOR = ["--default-non-nullable", "false"]


def test_the_committed_types_are_generated_from_the_current_document(tmp_path: Path) -> None:
    document = tmp_path / "openapi.json"
    document.write_text(json.dumps(openapi_document()))
    generated = tmp_path / "schema.ts"
    cli = npm_ready(PACKAGE) / "openapi-typescript"
    command = [str(cli), str(document), *GENERATOR, "--output", str(generated)]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=NODE_TIMEOUT, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    committed = (PACKAGE / "src" / "schema.ts").read_text()
    assert generated.read_text() == committed, (
        "clients/typescript/src/schema.ts is not the document's: run `npm run generate` there"
    )


async def test_the_node_tests_pass_against_the_service(tmp_path: Path) -> None:
    async with exclusive(), service(tmp_path) as running:
        build(PACKAGE)
        tests = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.glob("dist/test/*.test.js"))
        code, printed = await node("--test", "--test-concurrency=1", *tests,
                                   cwd=PACKAGE, env=running.env)  # fmt: skip
    assert code == 0, printed
    assert "# fail 0" in printed, printed  # TAP, node's reporter when not on a terminal
    assert running.person.answered, "the person answered nothing"
