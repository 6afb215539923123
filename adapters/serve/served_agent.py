"""The agent `serve` and `demo` run: built-in, or from the agent file (`HITL_AGENT_FILE`,
`--agent FILE`): its prompt, model, human tools and tools (MCP servers, Python callables).

Without a file it is today's agent: the built-in human tools and a release assistant's prompt.
"""

from __future__ import annotations

from dataclasses import dataclass

from adapters.serve.settings import Settings
from adapters.serve.startup import tools_step
from bot import AIChannel, AIProvider, AnthropicAIProvider, HumanInputToolHandler
from bot.agent.scripted import ScriptedAIProvider
from bot.audit.redaction import redaction_keys
from bot.config.agent_file import AgentConfig, human_tool_names, load_agent_file
from bot.gates.gate import Gate
from bot.human_input import HumanInputHandler, RequestRules
from bot.human_input.rules import NO_RULES
from bot.human_tools.tool import BUILTIN_TOOLS
from bot.tool_sources.elicitation import HumanElicitation
from bot.tool_sources.setup import AgentTools, build_tool_handler

SYSTEM_PROMPT = (
    "You are a release assistant working with a team. Before anything irreversible, ask for "
    "approval or confirmation with the human tools; ask questions when something is unclear."
)


def make_provider(settings: Settings) -> AIProvider:
    """The scripted model when asked for (HITL_MODEL=scripted) or without a key (`serve`
    refuses to start without either, see serve.check_model_settings); else the Anthropic API."""
    if settings.scripted_model or not settings.has_anthropic_key:
        return ScriptedAIProvider(call_tools=True)  # and the agent file's first tool, once
    assert settings.anthropic_api_key is not None
    return AnthropicAIProvider(
        model=settings.model,
        api_key=settings.anthropic_api_key.get_secret_value(),
        base_url=settings.anthropic_base_url,
    )


def read_agent_file(settings: Settings) -> tuple[Settings, AgentConfig | None]:
    """The agent file named by the settings (ConfigurationError, FILE:LINE, if it is wrong),
    and the settings with its model (HITL_MODEL=scripted, the demo model, still wins)."""
    if settings.agent_file is None:
        return settings, None
    config = load_agent_file(settings.agent_file)
    if config.model is not None and not settings.scripted_model:
        settings = settings.model_copy(update={"model": config.model})
    return settings, config


def audit_redaction(settings: Settings, config: AgentConfig | None) -> frozenset[str]:
    """The argument keys the audit log redacts: HITL_AUDIT_REDACT's and every tool source's
    `redact` (a key secret in what people are shown is secret in the log too)."""
    sources = config.tools if config is not None else ()
    return redaction_keys(settings.audit_redact, *(source.redact for source in sources))


@dataclass
class Agent:
    """What an AI channel is made of; `close()` stops its tools (MCP servers)."""

    system_prompt: str
    human: HumanInputToolHandler
    tools: AgentTools | None = None

    def channel(
        self, channel_id: str, provider: AIProvider, *, gate: Gate | None = None
    ) -> AIChannel:
        """The AI channel; `gate` (bot/gates/gate.py `approval_gate`) asks before the agent
        file's gated tools run."""
        tools = self.tools
        return AIChannel(
            channel_id,
            provider=provider,
            system_prompt=self.system_prompt,
            human_input_handler=self.human,
            # The one place the tool handler is made: an approval gate wraps it here.
            tool_handler=build_tool_handler(tools, gate=gate) if tools is not None else None,
            tool_catalog=tools.catalog if tools is not None else None,
        )

    async def close(self) -> None:
        if self.tools is not None:
            await self.tools.close()


async def open_agent(
    settings: Settings, config: AgentConfig | None, *, rules: RequestRules = NO_RULES
) -> Agent:
    """The agent of `config` (None: the built-in one), its tools started: a source that
    cannot start is a StartupError naming it; an unknown name in `approval` is a
    ConfigurationError at its line. `rules`: the policy's for its requests."""
    timeout = settings.timeout_seconds
    handler = HumanInputHandler(rules=rules, recheck_seconds=settings.recheck_seconds)
    if config is None:
        return Agent(SYSTEM_PROMPT, HumanInputToolHandler.builtin(timeout=timeout, handler=handler))
    human = HumanInputToolHandler(
        timeout=timeout,
        handler=handler,
        tools=[BUILTIN_TOOLS[name] for name in human_tool_names(config)],
    )
    elicitation = HumanElicitation(human.handler, timeout=timeout)
    tools = AgentTools.from_config(config, elicitation=elicitation)
    with tools_step():
        await tools.start()
    return Agent(config.system_prompt, human, tools)
