"""deploy/Dockerfile, read as the builder reads it (dockerfile-parse): installed by the script
`make install` runs, runtime dependencies only, a non-root user, a health check on /readyz, and
`hitl-bridge serve`. No image is built here (no container runtime: docs/deployment.md)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from dockerfile_parse import DockerfileParser

ROOT = Path(__file__).resolve().parents[2]
INSTALL = "deploy/install.sh"


def instructions(name: str) -> list[str]:
    parser = DockerfileParser(str(ROOT / "deploy" / "Dockerfile"))
    return [each["value"] for each in parser.structure if each["instruction"] == name]


def test_every_stage_is_python_3_11_slim_and_installs_with_the_shared_script() -> None:
    assert [image.split(" ")[0] for image in instructions("FROM")] == ["python:3.11-slim"] * 2
    runs = instructions("RUN")
    assert [run for run in runs if INSTALL in run] == [f"sh {INSTALL} /opt/hitl-bridge/venv"]
    assert not [run for run in runs if "pip" in run or "[dev]" in run]
    copied = [value.split()[0] for value in instructions("COPY") if "--from" not in value]
    assert INSTALL in copied
    for source in copied:
        assert (ROOT / source).exists(), source


def test_make_install_runs_the_same_script() -> None:
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^\$\(VENV\)/\.installed:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert recipe is not None
    assert f"sh {INSTALL} --editable $(VENV)" in recipe.group(1)
    assert "pip install" not in recipe.group(1)
    script = (ROOT / INSTALL).read_text()
    assert "pip install --quiet $editable .\n" in script and "[dev]" not in script


def test_the_image_installs_plain_and_keeps_only_the_venv() -> None:
    """Not editable: the wheel carries the migrations (tests/deploy/test_installed_package.py
    runs `db upgrade` from such an install), so the second stage takes the venv alone."""
    runs = [run for run in instructions("RUN") if INSTALL in run]
    assert runs == [f"sh {INSTALL} /opt/hitl-bridge/venv"]
    copied = [value for value in instructions("COPY") if "--from" in value]
    assert copied == ["--from=build /opt/hitl-bridge/venv /opt/hitl-bridge/venv"]


@pytest.mark.subprocess
def test_the_script_says_how_to_call_it() -> None:
    ran = subprocess.run(["sh", str(ROOT / INSTALL)], capture_output=True, text=True, check=False)
    assert (ran.returncode, ran.stderr) == (2, "usage: deploy/install.sh [--editable] VENV\n")


def test_it_runs_serve_as_a_user_on_the_settings_port() -> None:
    (user,) = instructions("USER")
    assert user.split(":")[0] not in {"root", "0"}
    assert json.loads(instructions("CMD")[-1]) == ["hitl-bridge", "serve"]
    env = " ".join(instructions("ENV"))
    port = re.search(r"HITL_PORT=(\d+)", env)
    assert port is not None and instructions("EXPOSE") == [port.group(1)]
    assert "HITL_HOST=0.0.0.0" in env


def health_command() -> list[str]:
    """The HEALTHCHECK's command, as exec form JSON."""
    (check,) = instructions("HEALTHCHECK")
    command: list[str] = json.loads(check.split(" CMD ", 1)[1])
    return command


def test_the_health_check_asks_readyz_with_python_alone() -> None:
    command = health_command()
    assert command[:2] == ["python", "-c"]
    assert "/readyz" in command[2] and "HITL_PORT" in command[2]


def test_the_build_context_leaves_secrets_and_local_state_out() -> None:
    ignored = (ROOT / ".dockerignore").read_text().splitlines()
    for pattern in (".git", ".venv", "**/.env", "**/*.db"):
        assert pattern in ignored
