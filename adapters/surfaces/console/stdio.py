"""The demo's terminal: standard output, and standard input read by a daemon thread.

A line is read off the file descriptor by a thread of its own, a daemon, rather than by the
event loop's executor: a read blocks until Enter, and the executor is joined when the loop
closes, so a Ctrl-C at a prompt would leave the process waiting for one more line. A daemon
thread is not joined; it reads the descriptor with `os.read`, never through `sys.stdin`, whose
lock it would otherwise hold while the interpreter shuts down. Lines typed ahead wait in the
queue for the next prompt, as they would in the terminal's own buffer.
"""

from __future__ import annotations

import asyncio
import codecs
import os
import sys
import threading

CHUNK = 65536


class StdioTerminal:
    """Standard input and output (`Terminal` of adapters/surfaces/console/surface.py)."""

    def __init__(self) -> None:
        self._fd = sys.stdin.fileno()
        self._encoding = sys.stdin.encoding or "utf-8"
        self._lines: asyncio.Queue[str | None] | None = None
        self._at_prompt = False

    async def read_line(self, prompt: str) -> str | None:
        self.write(f"{prompt}> ", end="")
        self._at_prompt = True
        if self._lines is None:
            self._lines = asyncio.Queue()
            reader = threading.Thread(
                target=_read_lines,
                args=(self._fd, self._encoding, asyncio.get_running_loop(), self._lines),
                name="stdin",
                daemon=True,
            )
            reader.start()
        line = await self._lines.get()
        self._at_prompt = False  # Enter was pressed: the terminal is on a new line
        if line is None:
            self._lines.put_nowait(None)  # closed for good: every later read is told so too
        return line

    def write(self, text: str, end: str = "\n") -> None:
        # Written while a prompt waits (a request's outcome, the Ctrl-C line): on a line of its own.
        start = "\n" if self._at_prompt else ""
        self._at_prompt = False
        sys.stdout.write(start + text + end)
        sys.stdout.flush()


def _read_lines(
    fd: int, encoding: str, loop: asyncio.AbstractEventLoop, lines: asyncio.Queue[str | None]
) -> None:
    """Put each line read from `fd` (without its newline) on `lines`, then None at its end."""
    decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
    typed = ""
    while True:
        try:
            chunk = os.read(fd, CHUNK)
        except OSError:
            chunk = b""
        typed += decoder.decode(chunk, final=not chunk)
        *whole, typed = typed.split("\n")
        if not chunk and typed:
            whole.append(typed)  # the last line, without its newline
        for line in whole:
            if not _tell(loop, lines, line):
                return
        if not chunk:
            _tell(loop, lines, None)
            return


def _tell(
    loop: asyncio.AbstractEventLoop, lines: asyncio.Queue[str | None], line: str | None
) -> bool:
    """Hand a line to the event loop; False once the loop is closed (the demo is over)."""
    try:
        loop.call_soon_threadsafe(lines.put_nowait, line)
    except RuntimeError:
        return False
    return True
