"""`hitl-bridge demo` in a real terminal (a pty it has as its controlling terminal): Ctrl-C
ends it at once, and a demo killed mid-question is resumed by the next one, asked again."""

from __future__ import annotations

import codecs
import fcntl
import os
import select
import signal
import subprocess
import sys
import termios
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess  # `hitl-bridge demo` runs as a process on a terminal

ROOT = Path(__file__).resolve().parents[4]
PATIENCE = 120.0  # seconds, a bound on a hung demo (a slow machine is not a failure)
QUESTION = "  Your answer> "  # the scripted model's first request, a question


class PtyDemo:
    """A demo process whose terminal is a pty: what it prints is read, keys are typed."""

    def __init__(self, database: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "HITL_"))}
        env |= {"HITL_DATABASE_URL": f"sqlite+aiosqlite:///{database}", "PYTHONPATH": str(ROOT)}
        self._terminal, pty = os.openpty()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "adapters.cli.command", "demo"],
            stdin=pty, stdout=pty, stderr=pty, env=env, cwd=database.parent,
            start_new_session=True, preexec_fn=_take_the_terminal,
        )  # fmt: skip
        os.close(pty)
        self.shown = ""
        self._expected = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def expect(self, text: str) -> str:
        """Read what is printed until `text` has been, after what was expected before
        (AssertionError if it never is); all that was shown so far."""
        while (found := self.shown.find(text, self._expected)) < 0:
            ready, _, _ = select.select([self._terminal], [], [], PATIENCE)
            chunk = self._read() if ready else b""
            assert chunk, f"{text!r} never shown; the terminal showed:\n{self.shown}"
            self._show(chunk)
        self._expected = found + len(text)
        return self.shown

    def send(self, keys: str) -> None:
        os.write(self._terminal, keys.encode())

    def exited(self) -> int:
        """The exit status, once the process ends (what it printed read to the end first)."""
        while select.select([self._terminal], [], [], PATIENCE)[0] and (chunk := self._read()):
            self._show(chunk)
        return self.process.wait(PATIENCE)

    def _show(self, chunk: bytes) -> None:
        self.shown += self._decoder.decode(chunk).replace("\r\n", "\n")

    def _read(self) -> bytes:
        try:
            return os.read(self._terminal, 4096)
        except OSError:  # EIO: the demo closed its end
            return b""

    def __enter__(self) -> PtyDemo:
        return self

    def __exit__(self, *_: object) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        os.close(self._terminal)


def _take_the_terminal() -> None:
    """In the child, a session leader: its pty becomes its controlling terminal, so a Ctrl-C
    typed there is a SIGINT, as in a shell."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def test_ctrl_c_at_a_question_withdraws_it_once_and_exits(tmp_path: Path) -> None:
    with PtyDemo(tmp_path / "demo.db") as demo:
        demo.expect("you> ")
        demo.send("Deploy please\n")
        demo.expect(QUESTION)
        demo.send("\x03")
        assert demo.exited() == 130
    out = demo.shown
    assert out.count("Withdrawn") == 1
    assert "- Question — Withdrawn: no answer is needed any more." in out
    assert out.rstrip().endswith("demo stopped (Ctrl-C): 1 open request withdrawn")


def test_ctrl_c_at_the_first_prompt_exits(tmp_path: Path) -> None:
    with PtyDemo(tmp_path / "demo.db") as demo:
        demo.expect("you> ")
        demo.send("\x03")
        assert demo.exited() == 130
    assert demo.shown.rstrip().endswith("demo stopped (Ctrl-C): 0 open requests withdrawn")


def test_a_demo_killed_mid_question_is_resumed_and_asked_again(tmp_path: Path) -> None:
    database = tmp_path / "demo.db"
    with PtyDemo(database) as killed:
        killed.expect("you> ")
        killed.send("Deploy please\n")
        killed.expect(QUESTION)
        killed.process.send_signal(signal.SIGKILL)
        assert killed.exited() == -signal.SIGKILL
    with PtyDemo(database) as demo:
        out = demo.expect(QUESTION)
        assert "resuming the turn a stopped demo left open (1 open request waiting)" in out
        assert "What should the release be called?" in out
        assert "you> " not in out  # the resumed turn goes first
        demo.send("Aurora\n")
        demo.expect("choose [1-2]> ")  # the run went on with the answer: the next request
        assert "Answer: Aurora" in demo.shown
        demo.send("\x03")
        assert demo.exited() == 130
    assert demo.shown.count("Withdrawn") == 1
