"""The AgentCard `serve` publishes at /.well-known/agent-card.json: a person, reachable in Slack
or Microsoft Teams, as an A2A agent with five skills (the door's tools), over JSON-RPC at /a2a
and HTTP+JSON under /a2a/rest, a bearer token of the doors required. Push notifications are
offered (`pushNotifications: true`, adapters/doors/a2a/push.py); a caller may also stream, subscribe
or poll GetTask."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import metadata

from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import PROTOCOL_VERSION_CURRENT, TransportProtocol

JSONRPC_PATH = "/a2a"
REST_PATH = "/a2a/rest"
SCHEME = "bearer"  # the security scheme's name in the card
JSON = "application/json"
TEXT = "text/plain"


@dataclass(frozen=True, slots=True)
class Skill:
    """A skill of the card: the built-in human tool it asks with."""

    id: str
    tool: str
    name: str
    description: str
    example: str


SKILLS = {
    skill.id: skill
    for skill in (
        Skill("ask_question", "AskUserQuestion", "Ask a question",
              "A person answers a question in words. The answer: {\"answer\": \"...\"}.",
              '{"tool": "ask_question", "arguments": {"question": "Which region?"}, '
              '"to": "slack:C0123ABCD"}'),
        Skill("request_approval", "requestApproval", "Ask for approval",
              "A person approves or declines an action. The answer: {\"approved\": true}; a "
              "decline ends the task rejected, with the person's reason.",
              '{"tool": "request_approval", "arguments": {"action": "Deploy v2", "reason": '
              '"Release day"}, "to": "slack:U0123ABCD"}'),
        Skill("select_option", "selectOption", "Ask to choose",
              "A person picks one of the options. The answer: {\"selectedIndex\": 0, "
              "\"selectedValue\": \"...\"}.",
              '{"tool": "select_option", "arguments": {"question": "Which plan?", "options": '
              '["small", "large"]}, "to": "slack:U0123ABCD"}'),
        Skill("collect_data", "collectUserData", "Collect data",
              "A person fills in a form of typed fields. The answer: each field's name with "
              "its value.",
              '{"tool": "collect_data", "arguments": {"fields": [{"name": "budget", "label": '
              '"Budget", "type": "number"}]}, "to": "email:a@example.com"}'),
        Skill("confirm_action", "confirmAction", "Confirm",
              "A person confirms an action, or does not. The answer: {\"confirmed\": true}.",
              '{"tool": "confirm_action", "arguments": {"title": "Drop the table", "message": '
              '"This deletes 12,000 rows."}, "to": "slack:U0123ABCD"}'),
    )
}  # fmt: skip


def agent_card(base_url: str) -> AgentCard:
    """The card, its interfaces under `base_url` (the service's address as its callers reach
    it, without a trailing slash)."""
    bearer = HTTPAuthSecurityScheme(
        scheme="Bearer", bearer_format="hitl_…",
        description="A token of the doors: hitl-bridge tokens create --name NAME",
    )  # fmt: skip
    return AgentCard(
        name="hitl-bridge",
        description=(
            "A person, asked in Slack or Microsoft Teams. Send a message with a data part "
            '{"tool", "arguments", "to"} (or text, with "to" in the message\'s metadata, asked '
            "as a question): the task is working while the person decides, then completed "
            "with the answer as a data artifact, rejected when they decline (with the reason), "
            "canceled when you cancel it, failed when it expires unanswered or cannot be "
            "delivered."
        ),
        version=bridge_version(),
        provider=AgentProvider(organization="hitl-bridge", url=base_url),
        supported_interfaces=[
            AgentInterface(
                url=base_url + JSONRPC_PATH,
                protocol_binding=TransportProtocol.JSONRPC,
                protocol_version=PROTOCOL_VERSION_CURRENT,
            ),
            AgentInterface(
                url=base_url + REST_PATH,
                protocol_binding=TransportProtocol.HTTP_JSON,
                protocol_version=PROTOCOL_VERSION_CURRENT,
            ),
        ],
        capabilities=AgentCapabilities(
            streaming=True, push_notifications=True, extended_agent_card=False
        ),
        security_schemes={SCHEME: SecurityScheme(http_auth_security_scheme=bearer)},
        security_requirements=[SecurityRequirement(schemes={SCHEME: StringList()})],
        default_input_modes=[JSON, TEXT],
        default_output_modes=[JSON, TEXT],
        skills=[
            AgentSkill(
                id=skill.id,
                name=skill.name,
                description=skill.description,
                tags=["human-in-the-loop", skill.tool],
                examples=[skill.example],
                input_modes=[JSON, TEXT],
                output_modes=[JSON],
            )
            for skill in SKILLS.values()
        ],
    )


def bridge_version() -> str:
    """This package's version, as the card tells it."""
    try:
        return metadata.version("hitl-bridge")
    except metadata.PackageNotFoundError:
        return "0"
