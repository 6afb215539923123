"""The documents (README.md and docs/) keep working: their Python blocks run, their shell blocks
parse, their YAML loads (as an agent or policy file when its first line says so), their relative
links lead to files and headings that exist, and nothing in the repository points outside it.

A Python block that reads `HITL_URL` runs against the real service on 127.0.0.1 (with the fake
Slack, and a person who approves), given `HITL_URL`, `HITL_TOKEN` and `HITL_TO`.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from bot.config.agent_file import load_agent_file
from bot.policies.policy_file import load_policy_file
from tests.examples.bridge import TO, Answer, Asked, bridge

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PATIENCE = 120.0  # seconds: a bound on a hung snippet, not a speed requirement
# What nothing in the repository may point at: the project's private design notes and the
# specifications' copies, which live outside it (docs/architecture.md says what they say).
OUTSIDE = ("DESIGN" + ".md", "../" + "shared", "seeds" + "/")


@dataclass(frozen=True)
class Block:
    document: Path
    line: int
    language: str
    text: str

    @property
    def name(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line}"


def blocks(language: str) -> list[Block]:
    """The fenced blocks of `language` in every document (indented ones in lists too), with the
    line each starts on."""
    found = []
    fence = re.compile(r"^( *)```(\w*)\n(.*?)^\1```", re.DOTALL | re.MULTILINE)
    for document in DOCUMENTS:
        text = document.read_text()
        for match in fence.finditer(text):
            if match.group(2) == language:
                line = text.count("\n", 0, match.start()) + 1
                found.append(Block(document, line, language, textwrap.dedent(match.group(3))))
    return found


def ids(found: list[Block]) -> list[str]:
    return [block.name for block in found]


def test_every_document_has_its_blocks_found() -> None:
    assert len(blocks("python")) >= 3
    assert blocks("sh") and blocks("yaml")


def approves(asked: Asked) -> Answer:
    return Answer({"approved": True})


async def run_python(
    block: Block, cwd: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    script = cwd / "snippet.py"
    script.write_text(block.text)
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(script), cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), PATIENCE)
    assert process.returncode is not None
    return subprocess.CompletedProcess([], process.returncode, out.decode(), err.decode())


@pytest.mark.subprocess  # each block runs as a script
@pytest.mark.parametrize("block", blocks("python"), ids=ids(blocks("python")))
async def test_python_blocks_run(block: Block, tmp_path: Path) -> None:
    env = {"HITL_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'hitl.db'}"}
    if "HITL_URL" in block.text:
        async with bridge(approves) as hitl:
            env |= {"HITL_URL": hitl.url, "HITL_TOKEN": hitl.token, "HITL_TO": TO}
            ran = await run_python(block, tmp_path, env)
        assert [asked.tool for asked in hitl.asked] == ["requestApproval"]
    else:
        ran = await run_python(block, tmp_path, env)
    assert ran.returncode == 0, f"{block.name}:\n{ran.stderr}"
    assert "Traceback" not in ran.stderr


@pytest.mark.subprocess  # bash -n
@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash to parse with")
@pytest.mark.parametrize("block", blocks("sh"), ids=ids(blocks("sh")))
def test_shell_blocks_parse(block: Block) -> None:
    checked = subprocess.run(["bash", "-n"], input=block.text, capture_output=True, text=True)
    assert checked.returncode == 0, f"{block.name}: {checked.stderr}"


@pytest.mark.parametrize("block", blocks("yaml"), ids=ids(blocks("yaml")))
def test_yaml_blocks_load(block: Block, tmp_path: Path) -> None:
    yaml.safe_load(block.text)  # every block is YAML
    path = tmp_path / "file.yaml"
    path.write_text(block.text)
    first = block.text.splitlines()[0]
    if first == "# agent file":
        load_agent_file(path)
    elif first == "# policy file":
        load_policy_file(path)


def _anchors(document: Path) -> set[str]:
    """GitHub's anchors of a document's headings: lower case, punctuation dropped, spaces to -."""
    headings = re.findall(
        r"^#+ (.+)$", re.sub(r"```.*?```", "", document.read_text(), flags=re.S), re.M
    )
    return {
        re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings
    }


def _links(document: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", document.read_text(), flags=re.DOTALL)
    return re.findall(r"\]\(([^)\s]+)\)", text)


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda d: str(d.relative_to(ROOT)))
def test_relative_links_resolve(document: Path) -> None:
    broken = []
    for link in _links(document):
        if re.match(r"[a-z]+:", link):
            continue  # https:, mailto:: not ours to check
        target, _, anchor = link.partition("#")
        path = (document.parent / target).resolve() if target else document
        if not path.exists():
            broken.append(f"{link}: no {target}")
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(f"{link}: no heading #{anchor} in {path.relative_to(ROOT)}")
    assert not broken, broken


def test_the_anchors_read_as_github_makes_them() -> None:
    assert "the-cores-python-api" in _anchors(ROOT / "docs" / "architecture.md")
    assert "http-or-socket-mode" in _anchors(ROOT / "docs" / "deployment.md")


def _tracked_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if listed.returncode == 0 and listed.stdout:
        return [ROOT / name for name in listed.stdout.split("\0") if name]
    skip = {".git", ".venv", ".mypy_cache", ".ruff_cache", ".pytest_cache", "__pycache__"}
    return [p for p in ROOT.rglob("*") if p.is_file() and not skip & set(p.parts)]


@pytest.mark.subprocess  # git ls-files
def test_nothing_points_outside_the_repository() -> None:
    found = []
    for path in _tracked_files():
        if not path.is_file():
            continue  # deleted in the work tree, not yet in the index
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            found += [f"{path.relative_to(ROOT)}:{number}: {o}" for o in OUTSIDE if o in line]
    assert not found, found


def test_the_readme_stays_short() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 250


def test_the_configuration_page_names_every_setting() -> None:
    from adapters.serve.settings import Settings

    page = (ROOT / "docs" / "configuration.md").read_text()
    missing = [
        field.alias
        for field in Settings.model_fields.values()
        if field.alias and f"`{field.alias}`" not in page
    ]
    assert not missing, f"docs/configuration.md does not name {missing}"
