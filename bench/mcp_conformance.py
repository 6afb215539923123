"""The official MCP conformance suite's server scenarios against `hitl-bridge serve`'s /mcp.

Run with `.venv/bin/python bench/mcp_conformance.py [--scratch DIR] [--version V]`. It prints
each scenario's checks and whether it applies, and asserts nothing.

The suite (`@modelcontextprotocol/conformance` on npm) needs Node 22 or later; Node 22 comes
from npm too (the `node` package), both installed into the scratch directory on the first run
(`npm install node@22 @modelcontextprotocol/conformance@V`). The service runs as
`hitl-bridge serve` in a subprocess (SQLite, a fake Slack and a fake model on loopback) with
HITL_ALLOWED_ORIGINS set to the origin the suite calls. The suite cannot send a bearer token,
so it calls a loopback relay that adds `Authorization: Bearer <a door token>` and passes
everything else (its `Origin` and `Host` included) through unchanged: the door authenticates
every request as it would any caller's.

A scenario "cannot apply" when it calls a fixture of the suite's reference server (tools named
`test_*`, resources, prompts, completions, logging, sampling or elicitation the bridge does
not offer) or needs a session (the door is stateless, so any worker takes any call).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
from aiohttp import web  # noqa: E402

from bench.slack_ack_latency import MODEL, SECRET, free_port  # noqa: E402
from bot.doors.tokens import Tokens  # noqa: E402
from bot.store import open_store, upgrade  # noqa: E402
from bot.store.doors import DoorTables  # noqa: E402
from tests.fakes.anthropic_api import FakeAnthropic  # noqa: E402
from tests.fakes.slack_api import FakeSlack  # noqa: E402

SUITE = "@modelcontextprotocol/conformance"
VERSION = "0.1.16"
SCRATCH = Path(tempfile.gettempdir()) / "hitl-mcp-conformance"
SETUP_TIMEOUT = 60.0
# Headers a relay must not copy: hop-by-hop ones, and those aiohttp sets for the body it sends.
HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "upgrade"}
# Why a scenario cannot apply to the bridge, by what the suite's reference server offers.
NEEDS = {
    "logging-set-level": "the reference server's logging (the bridge offers no logging)",
    "completion-complete": "the reference server's prompts to complete (the bridge has none)",
    "tools-call-with-logging": "the fixture tool test_tool_with_logging",
    "tools-call-with-progress": "the fixture tool test_tool_with_progress",
    "tools-call-sampling": "the fixture tool test_sampling (a server-to-client request)",
    "tools-call-elicitation": "the fixture tool test_elicitation (a server-to-client request)",
    "json-schema-2020-12": "the fixture tool json_schema_2020_12_tool",
    "elicitation-sep1034-defaults": "the fixture tool test_elicitation_sep1034_defaults",
    "elicitation-sep1330-enums": "the fixture tool test_elicitation_sep1330_enums",
    "server-sse-polling": "the fixture tool test_reconnection and a session to resume",
    "server-sse-multiple-streams": "a session id (the door is stateless by design)",
}


def fixture_need(scenario: str) -> str | None:
    """What of the reference server `scenario` calls, if the bridge cannot offer it."""
    if scenario in NEEDS:
        return NEEDS[scenario]
    if scenario.startswith("tools-call-"):
        return "a fixture tool test_* of the reference server"
    if scenario.startswith(("resources-", "prompts-")):
        return "the reference server's resources and prompts (the bridge offers tools only)"
    return None


def install(scratch: Path, version: str) -> tuple[Path, Path]:
    """Node 22 and the suite in `scratch` (npm, once): the node binary and the suite's CLI."""
    node = scratch / "node_modules" / ".bin" / "node"
    cli = scratch / "node_modules" / SUITE / "dist" / "index.js"
    installed = scratch / "node_modules" / SUITE / "package.json"
    if not installed.exists() or json.loads(installed.read_text())["version"] != version:
        scratch.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--prefix", str(scratch), "--no-audit", "--no-fund",
                        "node@22", f"{SUITE}@{version}"], check=True)  # fmt: skip
    return node, cli


async def start_serve(
    db_url: str, slack: FakeSlack, model: FakeAnthropic, origin: str, http: aiohttp.ClientSession,
    log: IO[bytes],
) -> tuple[asyncio.subprocess.Process, str]:  # fmt: skip
    """`hitl-bridge serve` on a free port, healthy, its log in `log`."""
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("HITL_", "SLACK_"))},
        "HITL_DATABASE_URL": db_url, "HITL_HOST": "127.0.0.1", "HITL_PORT": str(port),
        "HITL_MODEL": MODEL, "HITL_ALLOWED_ORIGINS": origin, "HITL_MCP_DEFAULT_TO": "slack:C1",
        "SLACK_BOT_TOKEN": slack.token, "SLACK_SIGNING_SECRET": SECRET,
        "SLACK_API_URL": slack.base_url, "ANTHROPIC_API_KEY": "bench",
        "ANTHROPIC_BASE_URL": model.base_url,
    }  # fmt: skip
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "adapters.cli.command", "serve", cwd=ROOT, env=env,
        stderr=log,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + SETUP_TIMEOUT
    while time.monotonic() < deadline and process.returncode is None:
        with contextlib.suppress(aiohttp.ClientError):
            async with http.get(f"{base}/healthz") as response:
                if response.status == 200:
                    return process, base
        await asyncio.sleep(0.05)
    process.kill()
    raise RuntimeError("the service did not become healthy")


@contextlib.asynccontextmanager
async def relay(target: str, token: str, port: int) -> AsyncIterator[None]:
    """127.0.0.1:`port` passing every request on to `target`, with the token added."""
    http = aiohttp.ClientSession(auto_decompress=False)

    async def forward(request: web.Request) -> web.StreamResponse:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP}
        headers["Authorization"] = f"Bearer {token}"
        body = await request.read()
        try:
            return await passed_on(request, headers, body)
        except aiohttp.ClientError as err:  # the service is gone: said, not a traceback
            return web.json_response({"error": "relay", "message": str(err)}, status=502)

    async def passed_on(
        request: web.Request, headers: dict[str, str], body: bytes
    ) -> web.StreamResponse:
        async with http.request(request.method, target + request.path_qs, headers=headers,
                                data=body or None) as upstream:  # fmt: skip
            response = web.StreamResponse(status=upstream.status, headers={
                k: v for k, v in upstream.headers.items() if k.lower() not in HOP})  # fmt: skip
            await response.prepare(request)
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", forward)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield
    finally:
        await runner.cleanup()
        await http.close()


async def scenarios(node: Path, cli: Path) -> list[str]:
    listing = await asyncio.create_subprocess_exec(str(node), str(cli), "list", "--server",
                                                   stdout=asyncio.subprocess.PIPE)  # fmt: skip
    out, _ = await listing.communicate()
    return [line.split()[1] for line in out.decode().splitlines() if line.startswith("  - ")]


async def run_scenario(node: Path, cli: Path, url: str, scenario: str, out: Path) -> list[Any]:
    """The checks of one scenario (the suite's checks.json), run against `url`."""
    run = await asyncio.create_subprocess_exec(
        str(node), str(cli), "server", "--url", url, "--scenario", scenario, "-o", str(out),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    await run.wait()
    return read_checks(out)


def read_checks(out: Path) -> list[Any]:
    found = sorted(out.glob("**/checks.json"))
    return json.loads(found[-1].read_text()) if found else []


def verdict(checks: list[Any]) -> str:
    statuses = {check.get("status") for check in checks}
    if not checks:
        return "NO CHECKS"
    return "FAIL" if "FAILURE" in statuses else "PASS"


async def bench(scratch: Path, version: str) -> None:
    node, cli = install(scratch, version)
    proxy_port = free_port()
    url = f"http://127.0.0.1:{proxy_port}/mcp"
    with tempfile.TemporaryDirectory() as folder:
        db_url = f"sqlite+aiosqlite:///{Path(folder) / 'bench.db'}"
        await upgrade(db_url)
        store = await open_store(db_url)
        token, _ = await Tokens(DoorTables(store)).create("conformance")
        await store.close()
        async with FakeSlack() as slack, FakeAnthropic() as model, aiohttp.ClientSession() as http:
            slack.channels.add("C1")
            origin = f"http://127.0.0.1:{proxy_port}"
            log_path = Path(folder) / "serve.log"
            with log_path.open("wb") as log:
                process, base = await start_serve(db_url, slack, model, origin, http, log)
                try:
                    async with relay(base, token, proxy_port):
                        await report(node, cli, url, Path(folder) / "results", version)
                finally:
                    if process.returncode is None:
                        process.terminate()
                    await process.wait()
            if process.returncode not in (0, -15):
                print(f"serve exited with {process.returncode}; its log ends:")
                print("\n".join(log_path.read_text().splitlines()[-20:]))


async def report(node: Path, cli: Path, url: str, out: Path, version: str) -> None:
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    print(f"{SUITE} {version}, {today}, {platform.machine()} {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, against {url}")  # fmt: skip
    applying = passing = 0
    for scenario in await scenarios(node, cli):
        checks = await run_scenario(node, cli, url, scenario, out / scenario)
        need = fixture_need(scenario)
        result = verdict(checks)
        shown = ", ".join(f"{c.get('id')}={c.get('status')}" for c in checks)
        if need is None:
            applying += 1
            passing += result == "PASS"
            print(f"applies   {scenario:32} {result:5} {shown}")
        else:
            print(f"n/a       {scenario:32} {result:5} needs {need}; {shown or 'no checks'}")
    print(f"{passing} of {applying} scenarios that apply pass")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scratch", type=Path, default=SCRATCH)
    parser.add_argument("--version", default=VERSION)
    args = parser.parse_args()
    asyncio.run(bench(args.scratch, args.version))


if __name__ == "__main__":
    main()
