"""`import hitl_client` (and `import hitl_client.frameworks`) loads no agent framework: they
are optional extras, and the client's import time is its users' start-up time. Run in a fresh
interpreter of this environment, where every framework is installed."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.subprocess

FRAMEWORKS = ("langchain", "langchain_core", "langgraph", "agents", "openai", "claude_agent_sdk")
SCRIPT = f"""
import sys
import hitl_client, hitl_client.frameworks, hitl_client.frameworks.errors
print(sorted({{m.split(".")[0] for m in sys.modules}} & set({FRAMEWORKS!r})))
"""


def imported(script: str) -> str:
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=True)  # fmt: skip
    return done.stdout.strip()


def test_the_client_imports_no_framework() -> None:
    assert imported(SCRIPT) == "[]"


@pytest.mark.parametrize(
    ("adapter", "framework"),
    [("langchain", "langgraph"), ("openai_agents", "agents"),
     ("claude_agent_sdk", "claude_agent_sdk")],
)  # fmt: skip
def test_each_adapter_imports_its_own_framework(adapter: str, framework: str) -> None:
    script = SCRIPT.replace("hitl_client.frameworks.errors", f"hitl_client.frameworks.{adapter}")
    assert f"'{framework}'" in imported(script)
