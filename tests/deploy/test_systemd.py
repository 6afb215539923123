"""deploy/hitl-bridge.service: read as systemd reads it (`systemd-analyze verify`, which names
an unknown key or a bad value), with its hardening scored (`systemd-analyze security`), and
what it must say: migrations before `serve`, settings from a file, no privileges."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "deploy" / "hitl-bridge.service"
BINARY = "/opt/hitl-bridge/venv/bin/hitl-bridge"
HARDENING = {
    "NoNewPrivileges": "yes",
    "ProtectSystem": "strict",
    "ProtectHome": "yes",
    "PrivateTmp": "yes",
    "CapabilityBoundingSet": "",
}
analyze = pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd")


def unit(text: str) -> dict[str, list[tuple[str, str]]]:
    """Each section's `Key=value` lines in order (a key may repeat, as systemd allows)."""
    sections: dict[str, list[tuple[str, str]]] = {}
    current = ""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
            sections[current] = []
        elif line and not line.startswith(("#", ";")):
            key, _, value = line.partition("=")
            sections[current].append((key.strip(), value.strip()))
    return sections


def values(key: str) -> list[str]:
    return [v for k, v in unit(UNIT.read_text())["Service"] if k == key]


def test_migrations_run_before_serve_with_the_settings_file() -> None:
    assert values("ExecStartPre") == [f"{BINARY} db upgrade"]
    assert values("ExecStart") == [f"{BINARY} serve"]
    assert values("EnvironmentFile") == ["/etc/hitl-bridge/env"]
    assert values("User") == ["hitl-bridge"]
    for key, value in HARDENING.items():
        assert values(key) == [value], key


def verify(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    """`systemd-analyze verify` on the unit with its binary at this checkout's virtualenv
    (verify requires the commands to exist)."""
    here = str(Path(sys.executable).with_name("hitl-bridge"))
    path = tmp_path / "hitl-bridge.service"
    path.write_text(text.replace(BINARY, here))
    return subprocess.run(
        ["systemd-analyze", "verify", str(path)], capture_output=True, text=True, check=False
    )


@pytest.mark.subprocess
@analyze
def test_systemd_reads_it_without_a_complaint_and_names_a_misspelt_key(tmp_path: Path) -> None:
    read = verify(tmp_path, UNIT.read_text())
    assert (read.returncode, read.stderr) == (0, "")
    misspelt = verify(tmp_path, UNIT.read_text().replace("NoNewPrivileges=", "NoNewPrivilege="))
    assert "Unknown key 'NoNewPrivilege'" in misspelt.stderr


@pytest.mark.subprocess
@analyze
def test_its_exposure_is_low(tmp_path: Path) -> None:
    """systemd's own score of the hardening, 0 (locked down) to 10 (exposed); 1.6 here."""
    scored = subprocess.run(
        ["systemd-analyze", "security", "--offline=true", str(UNIT)],
        capture_output=True, text=True, check=False, cwd=tmp_path,
    )  # fmt: skip
    found = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", scored.stdout)
    assert found is not None, scored.stdout + scored.stderr
    assert float(found.group(1)) <= 2.0
