"""What an example's README tells a reader to type, read from it, and run as they would: the
tests run the README's own command, so a README that no longer works fails them."""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from adapters.serve.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
PATIENCE = 120.0  # seconds: a bound on a hung example, not a speed requirement


@dataclass(frozen=True)
class Told:
    """The README's `sh` block: its install command, and its run command with its variables."""

    install: list[str]
    env: dict[str, str]
    run: list[str]


@dataclass(frozen=True)
class Ran:
    status: int
    out: str
    err: str


def told(example: str) -> Told:
    """The commands of examples/<example>/README.md's `sh` block (two: install, then run)."""
    text = (ROOT / "examples" / example / "README.md").read_text()
    block = re.search(r"```sh\n(.*?)```", text, re.DOTALL)
    assert block is not None, f"examples/{example}/README.md has no sh block"
    install, run = (shlex.split(line, comments=True) for line in _lines(block.group(1)))
    env: dict[str, str] = {}
    while run and re.fullmatch(r"[A-Z_]+=.*", run[0]):
        name, _, value = run.pop(0).partition("=")
        env[name] = value
    return Told(install, env, run)


def checked(example: str, package: str) -> Told:
    """examples/<example>/README.md's commands, its install line checked against pyproject's
    pin of `package` (the client from the clone, and the framework: nothing of the server) and
    its HITL_URL's port against serve's default."""
    readme = told(example)
    assert readme.install == ["pip", "install", "./clients/python", dev_requirement(package)]
    assert port_of(readme.env["HITL_URL"]) == serve_port()
    return readme


def _lines(script: str) -> list[str]:
    """The block's commands, a line continued by a backslash joined to the next."""
    return [line for line in script.replace("\\\n", " ").splitlines() if line.strip()]


def dev_requirement(name: str) -> str:
    """The requirement the tests run with (pyproject's dev extra) for the distribution `name`."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    dev: list[str] = project["project"]["optional-dependencies"]["dev"]
    return next(r for r in dev if re.match(rf"{re.escape(name)}\b", r))


def serve_port() -> int:
    """The port `hitl-bridge serve` listens on unless HITL_PORT says otherwise."""
    default = Settings.model_fields["port"].default
    assert isinstance(default, int)
    return default


def port_of(url: str) -> int | None:
    return urlsplit(url).port


async def run_as_told(command: list[str], env: dict[str, str]) -> Ran:
    """Run the README's command from the repository's root, as the README says, with this
    Python for `python` and `env` over the environment (the installed packages are this one's)."""
    assert command[0] == "python", command
    process = await asyncio.create_subprocess_exec(
        sys.executable, *command[1:], cwd=ROOT, env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), PATIENCE)
    assert process.returncode is not None
    return Ran(process.returncode, out.decode(), err.decode())
