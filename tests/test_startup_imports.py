"""Commands start at once: what a fresh interpreter imports for `import bot`, `import hitl_client`,
`hitl-bridge --help` and `hitl-bridge tokens list` holds none of the SDKs those never use (each
costs seconds to import; bench/startup.py has the figures). Each case runs in a subprocess, as
a command does: this process has imported everything already."""

from __future__ import annotations

import ast
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import bot

pytestmark = pytest.mark.subprocess  # each import is measured in a fresh process

ROOT = Path(__file__).resolve().parents[1]
# The model SDK, MCP, the chat SDKs, the admin console's templates, the HTTP server and client.
SDKS = ("anthropic", "mcp", "slack_bolt", "slack_sdk", "microsoft_teams", "jinja2", "aiohttp",
        "prometheus_client")  # fmt: skip
STORE = ("sqlalchemy", "alembic")  # the store: only commands that open it
REPORT = "import json, sys; print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"


def imported_after(code: str, tmp_path: Path) -> set[str]:
    """The top-level packages a fresh interpreter holds after running `code`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HITL_", "SLACK_", "OTEL_"))}
    env["PYTHONPATH"] = str(ROOT)
    env["HITL_DATABASE_URL"] = f"sqlite+aiosqlite:///{tmp_path / 'bridge.db'}"
    done = subprocess.run(
        [sys.executable, "-c", f"{code}\n{REPORT}"], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    packages: list[str] = json.loads(done.stdout.splitlines()[-1])
    return set(packages)


# The client's names are imported on first use: the second line is what a program pays.
USED_CLIENT = "from hitl_client import HitlClient, SyncHitlClient, verify_webhook"


@pytest.mark.parametrize("code", ["import bot", "import hitl_client", USED_CLIENT])
def test_the_core_and_its_client_import_no_sdk_and_no_store(code: str, tmp_path: Path) -> None:
    imported = imported_after(code, tmp_path)
    assert imported.isdisjoint(SDKS + STORE), sorted(imported.intersection(SDKS + STORE))


def test_help_imports_no_sdk_and_no_store(tmp_path: Path) -> None:
    code = (
        "import contextlib, io, adapters.cli.command\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    adapters.cli.command.main(['--help'])"
    )
    imported = imported_after(code, tmp_path)
    assert "adapters" in imported
    assert imported.isdisjoint(SDKS + STORE), sorted(imported.intersection(SDKS + STORE))


def test_a_store_command_imports_the_store_and_no_sdk(tmp_path: Path) -> None:
    code = (
        "import adapters.cli.command\n"
        "assert adapters.cli.command.main(['db', 'upgrade']) == 0\n"
        "assert adapters.cli.command.main(['tokens', 'list']) == 0"
    )
    imported = imported_after(code, tmp_path)
    assert "sqlalchemy" in imported
    assert imported.isdisjoint(SDKS), sorted(imported.intersection(SDKS))


def test_serving_slack_alone_does_not_import_the_teams_sdk_nor_the_model_sdk(
    tmp_path: Path,
) -> None:
    imported = imported_after("import adapters.serve.service", tmp_path)
    assert "aiohttp" in imported
    # The MCP SDK and Alembic too: serve loads the first once it is ready, never the second;
    # OpenTelemetry only with an OTLP endpoint set (adapters/ops/tracing.py), A2A with an agent
    # or once serve is ready (the door's SDK, as MCP's), AG-UI's too; prometheus_client with a
    # metrics address.
    for sdk in ("microsoft_teams", "slack_bolt", "anthropic", "mcp", "alembic", "opentelemetry",
                "a2a", "ag_ui", "prometheus_client"):  # fmt: skip
        assert sdk not in imported, f"importing adapters.serve.service imports {sdk}"


def _declared_names() -> dict[str, str]:
    """Each name `bot/__init__.py` imports for the type checker, and the module it names."""
    tree = ast.parse((ROOT / "bot" / "__init__.py").read_text())
    return {
        alias.name: node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("bot.")
        for alias in node.names
    }


def test_every_public_name_of_bot_is_the_object_its_module_defines() -> None:
    """`bot` imports its names on first use: each of `__all__` is there (in `dir` too), the
    very object of the module the type checker is told."""
    declared = _declared_names()
    assert sorted(declared) == sorted(bot.__all__)
    for name, module in declared.items():
        assert getattr(bot, name) is getattr(importlib.import_module(module), name), name
    assert set(bot.__all__) <= set(dir(bot))


def test_an_unknown_name_of_bot_is_an_import_error() -> None:
    with pytest.raises(ImportError):
        from bot import NoSuchName  # type: ignore[attr-defined]  # noqa: F401
