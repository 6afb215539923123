"""A pretend service's operations as an MCP server: deploy, rollback, status, and a restart that
asks the person first (an MCP elicitation).

hitl-bridge starts it over stdio from `agent.yaml` beside it (`hitl-bridge demo --agent
examples/ops/agent.yaml`); `python ops_server.py --http 8765` serves it over streamable HTTP
at http://127.0.0.1:8765/mcp instead (point an agent file's `url:` at it).
"""

from __future__ import annotations

import argparse
from typing import Annotated, Literal

from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel, Field

mcp = MCPServer(
    "ops",
    instructions="Deploys and rolls back the team's services. Deploys need approval.",
)

# What is deployed where: a pretend fleet, in this process's memory.
FLEET: dict[str, dict[str, str]] = {
    "payments-api": {"version": "v2.4.0", "previous": "v2.3.9", "env": "production"},
    "ledger": {"version": "v1.8.2", "previous": "v1.8.1", "env": "production"},
}

Service = Annotated[str, Field(description="The service's name.", examples=["payments-api"])]


@mcp.tool()
def deploy(
    service: Service,
    version: Annotated[str, Field(description="The version to deploy.", examples=["v2.5.0"])],
    env: Annotated[
        Literal["staging", "production"],
        Field(description="Where to deploy it.", examples=["production"]),
    ],
) -> str:
    """Deploy a version of a service to an environment."""
    current = FLEET.setdefault(service, {"version": "none", "previous": "none", "env": env})
    current.update(previous=current["version"], version=version, env=env)
    return f"Deployed {service} {version} to {env} (was {current['previous']})."


@mcp.tool()
def rollback(service: Service) -> str:
    """Roll a service back to the version it ran before its last deploy."""
    current = FLEET.get(service)
    if current is None:
        raise ToolError(f"unknown service {service!r}")
    current["version"], current["previous"] = current["previous"], current["version"]
    return f"Rolled {service} back to {current['version']}."


@mcp.tool()
def status(service: Service) -> dict[str, str]:
    """What version of a service runs, and where."""
    current = FLEET.get(service)
    if current is None:
        raise ToolError(f"unknown service {service!r}")
    return {"service": service, **current}


class RestartConfirmation(BaseModel):
    confirm: bool = Field(description="Restart it now?")
    reason: str = Field("", description="Why (for the change log).")


def _ask_restart(service: str) -> Elicit[RestartConfirmation]:
    return Elicit(
        f"Restart {service}? Its requests in flight will be dropped.", RestartConfirmation
    )


@mcp.tool()
def confirm_restart(
    service: Service,
    answer: Annotated[ElicitationResult[RestartConfirmation], Resolve(_ask_restart)],
) -> str:
    """Restart a service, once the person confirms it (they are asked during the call)."""
    if not isinstance(answer, AcceptedElicitation):
        return f"Not restarted: the person chose {answer.action}."
    if not answer.data.confirm:
        return "Not restarted: the person said no."
    why = f" ({answer.data.reason})" if answer.data.reason else ""
    return f"Restarted {service}{why}."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP")
    args = parser.parse_args()
    if args.http is not None:
        mcp.run("streamable-http", host="127.0.0.1", port=args.http)
    else:
        mcp.run()


if __name__ == "__main__":
    main()
