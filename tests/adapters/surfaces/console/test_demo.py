"""`hitl-bridge demo`, the main job: a real process, answered on its standard input."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess  # `hitl-bridge demo` runs as a process

ROOT = Path(__file__).resolve().parents[4]


def run_demo(
    tmp_path: Path, typed: str, *args: str, **variables: str
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "HITL_"))}
    env.update(variables)
    env["HITL_DATABASE_URL"] = f"sqlite+aiosqlite:///{tmp_path / 'demo.db'}"
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "adapters.cli.command", "demo", *args],
        input=typed, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
        check=False,
    )  # fmt: skip


def test_the_scripted_agent_asks_with_every_tool_and_hears_the_answers(tmp_path: Path) -> None:
    runbook = tmp_path / "runbook.txt"
    runbook.write_text("roll back with make rollback\n")
    typed = "\n".join([
        "Deploy please", "Aurora",
        "2", "too risky today",  # the approval's menu: Decline, then its reason
        "4", "2",  # "4" is no option: asked again
        "CHG-1", "three", "oncall@example.com",  # the core finds "three" wrong ...
        "3",  # ... and only that field is asked again
        str(runbook),
        "1", "y",  # Confirm, and sure
    ]) + "\n"  # fmt: skip
    done = run_demo(tmp_path, typed)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "1) Approve  2) Decline" in out
    assert "✗ Approval needed — Declined by" in out and "Reason: too risky today" in out
    assert "type a number from 1 to 3" in out
    assert "! Replica count: Enter a number" in out
    assert out.count("Replica count (a number)> ") == 2
    assert out.count("Change ticket> ") == 1
    assert "1) Confirm  2) Cancel  3) Decline" in out
    assert "Are you sure? This cannot be undone. [y/n]> " in out
    summary = out[out.index("Here is what you told me:") :]
    assert '{"answer":"Aurora"}' in summary
    assert '{"error": "Rejected: too risky today"}' in summary
    assert '{"selectedIndex":1,"selectedValue":"us-east-1"}' in summary
    assert '{"ticket":"CHG-1","replicas":3,"contact":"oncall@example.com"}' in summary
    assert f'{{"fileName":"runbook.txt","fileSize":29,"url":"{runbook.as_uri()}"}}' in summary
    assert '{"confirmed":true}' in summary


def test_a_refusal_reaches_the_agent_and_closed_input_ends_the_run(tmp_path: Path) -> None:
    done = run_demo(tmp_path, "/reject not my call\n", "--message", "Deploy please")
    assert done.returncode == 0, done.stderr
    assert "✗ Question — Declined by" in done.stdout and "Reason: not my call" in done.stdout
    assert '"error": "Rejected: not my call"' in done.stdout
    assert "Reason: The console was closed" in done.stdout  # every later request, on EOF


OPS_AGENT = ROOT / "examples" / "ops" / "agent.yaml"


def test_the_ops_example_s_agent_calls_its_mcp_server_s_deploy(tmp_path: Path) -> None:
    typed = "Aurora\n1\n"  # the question, then the deploy's gate: Approve
    done = run_demo(tmp_path, typed, "--message", "Ship it", "--agent", str(OPS_AGENT))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "What should the release be called?" in out  # the file's one human tool
    assert "Drop the old database replica" not in out  # and not the others
    assert "Everything is ready: I'll call deploy." in out
    assert "Run deploy?" in out and "env: production" in out  # approval: [deploy]
    summary = out[out.index("Here is what you told me:") :]
    assert '{"answer":"Aurora"}' in summary
    assert "Deployed payments-api v2.5.0 to production (was v2.4.0)." in summary


def test_an_agent_file_error_is_one_line_with_its_line(tmp_path: Path) -> None:
    agent = tmp_path / "agent.yaml"
    agent.write_text("system_prompt: ops\ntools:\n  - mcp: {command: [python, ops.py]}\n"
                     "    approval: {deploy: yes}\n")  # fmt: skip
    done = run_demo(tmp_path, "", "--agent", str(agent))
    assert done.returncode == 2
    assert done.stderr == (
        f"hitl-bridge: {agent}:4: tools[0].approval: must be true, false or a list of tool names\n"
    )


def test_an_mcp_server_that_cannot_start_is_named_and_the_demo_stops(tmp_path: Path) -> None:
    agent = tmp_path / "agent.yaml"
    agent.write_text("tools:\n  - mcp:\n      command: [python, -c, 'raise SystemExit(4)']\n"
                     "      name: ops\n")  # fmt: skip
    done = run_demo(tmp_path, "", "--agent", str(agent))
    assert done.returncode == 1
    assert done.stderr.startswith("hitl-bridge: MCP server `ops` did not start: ")
    assert done.stderr.count("\n") == 1


# Two approvers of Slack, the actor not among them: one person at a terminal cannot meet it.
TWO_APPROVERS = """\
rules:
  - match: {tool: "*"}
    approvers: [slack:U0BOB00001, slack:U0CAROL001]
    required: 2
    allow_self: false
"""


def test_a_policy_file_is_refused_in_one_line_not_ignored(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(TWO_APPROVERS)
    typed = "Aurora\n1\n"  # what would approve the deploy, were the policy ignored
    done = run_demo(tmp_path, typed, "--message", "Ship it", "--agent", str(OPS_AGENT),
                    HITL_POLICY_FILE=str(policy))  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == (
        f"hitl-bridge: the demo does not apply HITL_POLICY_FILE ({policy}): it has only you at "
        "the terminal; unset it for the demo, or try the policy with `serve`\n"
    )
    assert "Deployed" not in done.stdout and "Run deploy?" not in done.stdout
