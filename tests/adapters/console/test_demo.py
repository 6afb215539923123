"""`hitl-bridge demo`, the main job: a real process, answered on its standard input."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def run_demo(tmp_path: Path, typed: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "HITL_"))}
    env["HITL_DATABASE_URL"] = f"sqlite+aiosqlite:///{tmp_path / 'demo.db'}"
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "adapters.cli", "demo", *args],
        input=typed, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
        check=False,
    )  # fmt: skip


def test_the_scripted_agent_asks_with_every_tool_and_hears_the_answers(tmp_path: Path) -> None:
    runbook = tmp_path / "runbook.txt"
    runbook.write_text("roll back with make rollback\n")
    typed = "\n".join([
        "Deploy please", "Aurora", "n", "too risky today", "4", "2",
        "CHG-1", "three", "oncall@example.com",  # refused: the whole form is asked again
        "CHG-1", "3", "oncall@example.com", str(runbook), "y",
    ]) + "\n"  # fmt: skip
    done = run_demo(tmp_path, typed)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert '{"answer":"Aurora"}' in out
    assert '{"approved":false,"reason":"too risky today"}' in out
    assert "type a number from 1 to 3" in out  # "4" was refused, "2" accepted
    assert '{"selectedIndex":1,"selectedValue":"us-east-1"}' in out
    assert "Invalid answer for 'collectUserData'" in out  # "three" is not a number
    assert '"replicas":3' in out and '"contact":"oncall@example.com"' in out
    assert '"fileName":"runbook.txt"' in out
    assert '{"confirmed":true}' in out
    assert "Here is what you told me:" in out


def test_a_refusal_reaches_the_agent_and_closed_input_ends_the_run(tmp_path: Path) -> None:
    done = run_demo(tmp_path, "/reject not my call\n", "--message", "Deploy please")
    assert done.returncode == 0, done.stderr
    assert "rejected (by" in done.stdout and "not my call" in done.stdout
    assert '"error": "Rejected: not my call"' in done.stdout
    assert "The console was closed" in done.stdout  # every later request, refused on EOF
