"""The figures of docs/figures.md measured again: each figure block's command run, and its output
written back with the date, the machine and the wall time (the format: docs/figures.md's top).

    python -m tools.figures            # every figure block, in order
    python -m tools.figures NAME ...   # those named only
    python -m tools.figures --list     # the blocks and their commands, nothing run

`make figures` runs the first form (`make figures ONLY="NAME ..."` the second). A command that
fails leaves its block as it was and makes the run fail, after the others have run.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "docs" / "figures.md"
BLOCK = re.compile(
    r"<!-- figure: (?P<name>[\w-]+)\ncommand: (?P<command>[^\n]+)\n-->\n"
    r"(?P<body>.*?)<!-- end figure: (?P=name) -->",
    re.DOTALL,
)


# What a block holds when it is added, until its first run.
UNMEASURED = "(not measured yet)\n"


@dataclass(frozen=True)
class Figure:
    name: str
    command: str


@dataclass(frozen=True)
class Run:
    """One run of a figure's command: what it printed and where and how long it ran."""

    output: str
    date: str
    machine: str
    seconds: float


def figures(text: str) -> list[Figure]:
    return [Figure(m["name"], m["command"]) for m in BLOCK.finditer(text)]


def machine() -> str:
    """This machine in one line: cores, processor, and its load just before a run."""
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        names = re.findall(r"^model name\s*:\s*(.+)$", cpuinfo.read_text(), re.MULTILINE)
        model = names[0] if names else model
    load = os.getloadavg()[0]
    return f"{os.cpu_count()} cores ({model}), load {load:.1f} before the run"


def body(figure: Figure, run: Run) -> str:
    """What a block holds: one line of provenance, then the command's output as it printed it."""
    said = f"`{figure.command}` · {run.date} · {run.machine} · {run.seconds:.0f} s wall time\n"
    return f"{said}\n```text\n{run.output.rstrip()}\n```\n"


def written(text: str, figure: Figure, run: Run) -> str:
    """`text` with `figure`'s block holding `run`."""

    def block(match: re.Match[str]) -> str:
        if match["name"] != figure.name:
            return match[0]
        head = f"<!-- figure: {figure.name}\ncommand: {figure.command}\n-->\n"
        return f"{head}{body(figure, run)}<!-- end figure: {figure.name} -->"

    return BLOCK.sub(block, text)


# A test runner's progress line (pytest's dots and percentage): no figure, only length.
PROGRESS = re.compile(r"^[.sxXFE]+ *\[ *\d+%\]$")


def tidy(output: str) -> str:
    """The command's output without progress lines, and with this checkout's paths (and the
    environment's VENV, if given) written as from the repository's root."""
    lines = [line for line in output.splitlines() if not PROGRESS.match(line.strip())]
    text = "\n".join(lines)
    venv = os.environ.get("VENV")
    if venv:
        text = text.replace(venv.rstrip("/") + "/", ".venv/")
    return text.replace(f"{ROOT}/", "")


def measure(figure: Figure) -> Run | None:
    """`figure`'s command run from the repository's root; None (and its output) if it failed."""
    print(f"{figure.name}: {figure.command}", flush=True)
    about = machine()
    started = time.monotonic()
    done = subprocess.run(  # noqa: S602 - the command is the document's, run as written
        figure.command, shell=True, cwd=ROOT, capture_output=True, text=True, check=False
    )
    seconds = time.monotonic() - started
    if done.returncode != 0:
        print(f"{figure.name}: failed ({done.returncode}):\n{done.stdout}{done.stderr}")
        return None
    today = datetime.now(UTC).date().isoformat()
    return Run(tidy(done.stdout), today, about, seconds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="the figures to measure (all by default)")
    parser.add_argument("--list", action="store_true", help="list the figures, run nothing")
    args = parser.parse_args(argv)
    known = figures(FIGURES.read_text())
    unknown = sorted(set(args.names) - {f.name for f in known})
    if unknown:
        print(f"docs/figures.md has no figure named {', '.join(unknown)}", file=sys.stderr)
        return 2
    chosen = [f for f in known if not args.names or f.name in args.names]
    if args.list:
        for figure in chosen:
            print(f"{figure.name}: {figure.command}")
        return 0
    failed = 0
    for figure in chosen:
        run = measure(figure)
        if run is None:
            failed += 1
            continue
        # Read again: a long run may overlap an edit of another section.
        FIGURES.write_text(written(FIGURES.read_text(), figure, run))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
