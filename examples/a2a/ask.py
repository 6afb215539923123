"""Ask a person for an approval through the bridge's A2A door, with the a2a-sdk's own client.

    HITL_URL=http://localhost:3000 HITL_TOKEN=hitl_... HITL_TO=slack:U0123ABCD \
        python examples/a2a/ask.py

The client reads the AgentCard at /.well-known/agent-card.json, sends a message whose data part
is {tool, arguments, to}, and streams the task: working while the person decides, then the
answer (a data artifact) and the final state.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from typing import Any

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers.proto_helpers import new_data_part
from a2a.types import Message, Role, SendMessageRequest, TaskState
from google.protobuf.json_format import MessageToDict


async def ask_approval(url: str, token: str, to: str, action: str, reason: str) -> dict[str, Any]:
    """The task's final state, what its status says, and the answer (None without one)."""
    headers = {"Authorization": f"Bearer {token}"}
    waits = httpx.Timeout(30.0, read=None)  # the stream is read while a person decides
    async with httpx.AsyncClient(headers=headers, timeout=waits) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)
        asked = {"tool": "request_approval", "to": to,
                 "arguments": {"action": action, "reason": reason}}  # fmt: skip
        message = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex,
                          parts=[new_data_part(asked)])  # fmt: skip
        outcome: dict[str, Any] = {"answer": None}
        async for event in client.send_message(SendMessageRequest(message=message)):
            if event.HasField("task"):
                print(f"task {event.task.id}: {TaskState.Name(event.task.status.state)}")
            elif event.HasField("artifact_update"):
                outcome["answer"] = MessageToDict(event.artifact_update.artifact.parts[0].data)
            elif event.HasField("status_update"):
                status = event.status_update.status
                outcome["state"] = TaskState.Name(status.state)
                outcome["said"] = " ".join(part.text for part in status.message.parts)
                print(f"{outcome['state']}: {outcome['said']}")
        return outcome


async def main() -> None:
    outcome = await ask_approval(
        os.environ["HITL_URL"], os.environ["HITL_TOKEN"], os.environ.get("HITL_TO", "slack:U0"),
        "Deploy v2 to production", "The release train leaves today",
    )  # fmt: skip
    approved = bool(outcome["answer"] and outcome["answer"].get("approved"))
    print("deploying" if approved else "not deploying")


if __name__ == "__main__":
    asyncio.run(main())
