"""examples/a2a: its README's install line brings everything ask.py imports (the client's
install and the A2A SDK without its server extra, nothing of the bridge's), and its README's
command, run as a process against the served bridge, streams the task to the person's answer."""

from __future__ import annotations

import ast
import re
import sys
from importlib.metadata import packages_distributions, requires

import pytest
from packaging.requirements import Requirement

from tests.examples.bridge import TO, Answer, Asked, bridge
from tests.examples.readme import ROOT, port_of, run_as_told, serve_port, told

ASK = ROOT / "examples" / "a2a" / "ask.py"
CLIENT = ROOT / "clients" / "python" / "pyproject.toml"

pytestmark = pytest.mark.subprocess  # the README's command runs as a process


def server_pin(name: str) -> Requirement:
    """The server's own requirement of `name` (pyproject.toml's dependencies)."""
    text = (ROOT / "pyproject.toml").read_text()
    found = re.search(rf'"({re.escape(name)}\[[^"]*\][^"]*)"', text)
    assert found is not None, name
    return Requirement(found.group(1))


def closure(names: list[str]) -> set[str]:
    """The distributions `names` install, their requirements' without extras, transitively."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop().lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        for line in requires(name) or []:
            needed = Requirement(line)
            if needed.marker is None or needed.marker.evaluate({"extra": ""}):
                todo.append(needed.name)
    return seen


def imported() -> set[str]:
    """The top-level modules ask.py imports."""
    tree = ast.parse(ASK.read_text(), str(ASK))
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
             for alias in node.names}  # fmt: skip
    names |= {node.module for node in ast.walk(tree)
              if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}  # fmt: skip
    return {name.split(".")[0] for name in names} - {"__future__"}


def test_the_install_line_is_the_client_and_the_sdk_without_the_server() -> None:
    readme = told("a2a")
    pin = server_pin("a2a-sdk")
    assert readme.install[:3] == ["pip", "install", "./clients/python"]
    sdk = Requirement(readme.install[3])
    assert (sdk.name, sdk.specifier, sdk.extras) == (pin.name, pin.specifier, set())
    assert len(readme.install) == 4
    assert port_of(readme.env["HITL_URL"]) == serve_port()
    assert readme.run == ["python", "examples/a2a/ask.py"]


def test_everything_the_script_imports_comes_with_that_install() -> None:
    client = re.findall(r'^    "([a-z][\w-]*)', CLIENT.read_text(), re.MULTILINE)
    assert client[:2] == ["httpx", "pydantic"], client
    installed = closure([*client[:2], "a2a-sdk"])
    providers = packages_distributions()
    for module in sorted(imported() - set(sys.stdlib_module_names)):
        dists = {d.lower().replace("_", "-") for d in providers.get(module, [])}
        assert dists & installed, f"{module} ({dists}) is not installed by the README's line"
    assert "starlette" not in installed and "sse-starlette" not in installed  # no server extra


def approver(asked: Asked) -> Answer:
    return Answer({"approved": True})


async def test_the_readme_s_command_streams_the_task_to_the_answer() -> None:
    readme = told("a2a")
    async with bridge(approver) as hitl:
        env = {**readme.env, "HITL_URL": hitl.url, "HITL_TOKEN": hitl.token, "HITL_TO": TO}
        ran = await run_as_told(readme.run, env)
    assert ran.status == 0, ran.err
    [asked] = hitl.asked
    assert (asked.tool, asked.arguments["action"]) == ("requestApproval", "Deploy v2 to production")
    assert "TASK_STATE_WORKING" in ran.out
    assert ran.out.rstrip().endswith("deploying") and "not deploying" not in ran.out
