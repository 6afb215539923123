"""hitl-client installs on its own: its wheel, built from clients/python, installed in a fresh
virtual environment (no site packages, so neither the server nor its SDKs), imports and talks
to a bridge (a stand-in of the standard library's http.server, in that environment)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

pytestmark = [pytest.mark.subprocess, pytest.mark.slow]  # pip builds and installs

CLIENT = Path(__file__).resolve().parents[3] / "clients" / "python"

# Run in the fresh environment: a GET answered by a stand-in, a webhook checked, and proof
# that the server's packages are nowhere to be found.
SCRIPT = r"""
import importlib.util, json, sys, threading
from http.server import BaseHTTPRequestHandler, HTTPServer
import hitl_client
from hitl_client import SyncHitlClient, verify_webhook
from hitl_client.webhooks import signature

REQUEST = {"id": "r1", "status": "answered", "to": "slack:U1", "answer": {"answer": "eu"}}

class Bridge(BaseHTTPRequestHandler):
    def do_GET(self):
        assert self.path == "/api/v1/requests/r1", self.path
        assert self.headers["Authorization"] == "Bearer hitl_t"
        body = json.dumps(REQUEST).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass

server = HTTPServer(("127.0.0.1", 0), Bridge)
threading.Thread(target=server.serve_forever, daemon=True).start()
with SyncHitlClient(f"http://127.0.0.1:{server.server_port}", "hitl_t") as hitl:
    assert hitl.get("r1").answer == {"answer": "eu"}
server.shutdown()
raw = json.dumps(REQUEST).encode()
headers = {"X-Hitl-Timestamp": "1700000000",
           "X-Hitl-Signature": signature("s", "1700000000", raw)}
assert verify_webhook("s", headers, raw, now=1700000001).id == "r1"
absent = [name for name in ("bot", "adapters", "slack_bolt", "sqlalchemy")
          if importlib.util.find_spec(name) is not None]
assert absent == [], absent
print("ok", hitl_client.__file__)
"""


def run(*argv: str | Path, cwd: Path) -> str:
    """`argv`'s output, run in `cwd` (not the checkout: `python -c` would import from it)."""
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=300,
                          check=False, cwd=cwd)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_wheel_installs_alone_and_works(tmp_path: Path) -> None:
    # Built from a copy: setuptools writes build/ beside the sources, not in the checkout.
    source = tmp_path / "source"
    shutil.copytree(CLIENT, source, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    pip = (sys.executable, "-m", "pip")
    run(*pip, "wheel", "--quiet", "--no-deps", source, "-w", tmp_path, cwd=tmp_path)
    (wheel,) = tmp_path.glob("hitl_client-*.whl")
    venv.create(tmp_path / "venv", with_pip=True)
    python = tmp_path / "venv" / "bin" / "python"
    run(
        python,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        wheel,
        cwd=tmp_path,
    )
    said = run(python, "-c", SCRIPT, cwd=tmp_path)
    assert said.startswith("ok ") and str(tmp_path / "venv") in said
    assert (Path(said.split()[1]).parent / "py.typed").exists()  # typed, for the user's checker
