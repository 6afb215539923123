"""A plain (not editable) install of the package runs `hitl-bridge db upgrade`: the migrations
ship inside it. The wheel is built as `pip install .` builds it (build isolation, from a copy of
what deploy/Dockerfile copies), then installed without its dependencies into a venv of its own
that borrows this interpreter's installed libraries (a path line, so their editable finders do
not run), and the command runs from elsewhere with no PYTHONPATH: nothing of the checkout is
in reach."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = [pytest.mark.subprocess, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
# What deploy/Dockerfile copies into its build stage (tests/deploy/test_dockerfile.py holds it).
SOURCES = ("pyproject.toml", "README.md", "bot", "adapters")


def _run(*command: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    ran = subprocess.run(
        [str(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return ran.stdout + ran.stderr


def _copy_sources(into: Path) -> None:
    into.mkdir()
    ignored = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, into / name, ignore=ignored)
        else:
            shutil.copy(ROOT / name, into / name)


def _venv_borrowing_libraries(venv: Path) -> Path:
    _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=venv.parent)
    python = venv / "bin" / "python"
    purelib = _run(
        python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=venv.parent
    ).strip()
    (Path(purelib) / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def test_a_plain_install_upgrades_a_fresh_database(tmp_path: Path) -> None:
    _copy_sources(tmp_path / "src")
    pip = (sys.executable, "-m", "pip")
    _run(
        *pip,
        "wheel",
        "--no-deps",
        "--quiet",
        "-w",
        tmp_path / "dist",
        tmp_path / "src",
        cwd=tmp_path,
    )
    (wheel,) = (tmp_path / "dist").glob("hitl_bridge-*.whl")
    python = _venv_borrowing_libraries(tmp_path / "venv")
    _run(*pip, "--python", python, "install", "--no-deps", "--quiet", wheel, cwd=tmp_path)

    database = tmp_path / "fresh.db"
    env = {
        key: value for key, value in os.environ.items() if not key.startswith(("HITL_", "PYTHON"))
    }
    env["HITL_DATABASE_URL"] = f"sqlite+aiosqlite:///{database}"
    (tmp_path / "elsewhere").mkdir()
    _run(
        tmp_path / "venv" / "bin" / "hitl-bridge",
        "db",
        "upgrade",
        cwd=tmp_path / "elsewhere",
        env=env,
    )

    with sqlite3.connect(database) as connection:
        (version,) = connection.execute("SELECT version_num FROM alembic_version").fetchone()
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
    versions = ROOT / "bot" / "store" / "migrations" / "versions"
    assert version == max(path.name.split("_")[0] for path in versions.glob("0*.py"))
    assert "requests" in tables
