"""The agent file (`HITL_AGENT_FILE`): the team's prompt, model, human tools and tool sources.

A YAML file validated by pydantic. Every error is one line naming the file, the line and the
field: `agent.yaml:7: tools[0].approval: ...`. The file's lines are kept, so errors found
later (a name in `approval` that the MCP server does not offer) name their line too.

```yaml
system_prompt: |                  # optional; a sensible default otherwise
  You run releases for the payments team.
model: claude-sonnet-5-5          # optional; HITL_MODEL otherwise
human_tools: builtin              # builtin (default) | none | [AskUserQuestion, ...]
tools:
  - mcp:
      command: [python, ops_server.py]   # stdio (args, env, cwd optional), or
      # url: https://ops.example/mcp     # streamable HTTP, with headers: {...}
    approval: [deploy, rollback]  # tool names that need a person; true = all; absent = none
    redact: [password, token]     # argument keys shown as ••• (optional)
    grant_minutes: 60             # "approve and allow here" lasts this long; 0 = not offered
    grant_scope: [env]            # a grant covers only calls with the same values of these
  - python: mypackage.tools:restart_service   # a sync or async callable
    approval: true
  - a2a:                          # a remote A2A agent: each of its skills is a tool
      url: https://agents.example/deployer   # where its AgentCard is served
      headers: {Authorization: "Bearer ${DEPLOYER_TOKEN}"}
suggested_prompts:                # optional, at most 4: offered in a new chat with the agent
  - title: Deploy                 # (Slack's assistant view); DEFAULT_SUGGESTED_PROMPTS otherwise
    message: Deploy the api service to staging.
```

`${NAME}` in an `env` or `headers` value is the environment variable NAME (a token kept out of
the file). Relative paths (`cwd`, a script in `command`) are from the file's folder.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    field_validator,
    model_validator,
)

from bot.config.yaml_file import YamlLines, load_yaml_model, parse_yaml_model, shown_path
from bot.errors import ConfigurationError
from bot.words.tool_names import BUILTIN_TOOL_NAMES

DEFAULT_SYSTEM_PROMPT = (
    "You are an assistant working with a team. Use your tools to do what you are asked. Before "
    "anything irreversible, ask for approval or confirmation with the human tools; ask questions "
    "when something is unclear."
)
MAX_SUGGESTED_PROMPTS = 4  # Slack's assistant view shows at most four
PROMPT_TITLE = 75  # characters: a prompt's title is a button's label
PROMPT_MESSAGE = 1000  # characters: what the prompt sends as the person's message
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,128}$")  # what the model's API accepts as a tool name
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _command(value: Any) -> Any:
    """`command: python server.py` (split as a shell would) or `[python, server.py]`."""
    return shlex.split(value) if isinstance(value, str) else value


def _expand(value: str) -> str:
    """`${NAME}` replaced by the environment variable NAME (an error if it is not set)."""

    def variable(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise ValueError(f"the environment variable {name} is not set")
        return os.environ[name]

    return _VARIABLE.sub(variable, value)


Expanded = Annotated[str, AfterValidator(_expand)]


class McpServerConfig(_Strict):
    """An MCP server: a command run over stdio, or a streamable HTTP endpoint."""

    command: Annotated[list[str] | None, BeforeValidator(_command), Field(min_length=1)] = None
    args: list[str] = []
    env: Annotated[dict[str, Expanded], Field(repr=False)] = {}  # may hold secrets
    cwd: str | None = None
    url: Annotated[str | None, Field(pattern=r"^https?://\S+$")] = None
    headers: Annotated[dict[str, Expanded], Field(repr=False)] = {}
    name: Annotated[str | None, Field(min_length=1, max_length=100)] = None
    # auto: the newest protocol the server speaks; legacy: the 2025 initialize handshake
    protocol: Literal["auto", "legacy"] = "auto"
    # how long a call may take, not counting the time a person takes to answer its questions
    call_timeout_seconds: Annotated[float, Field(gt=0, le=24 * 3600)] = 300.0

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either `command` (a server run over stdio) or `url`")
        if self.url is not None and (self.args or self.env or self.cwd is not None):
            raise ValueError("`args`, `env` and `cwd` go with `command`, not `url`")
        if self.command is not None and self.headers:
            raise ValueError("`headers` go with `url`, not `command`")
        return self

    @property
    def label(self) -> str:
        """How the server is named in messages: its `name`, its command line or its URL."""
        if self.name:
            return self.name
        if self.command is not None:
            return shlex.join([*self.command, *self.args])
        return str(self.url)


class A2aAgentConfig(_Strict):
    """A remote A2A agent: its AgentCard is read from `url`; `headers` go on every call."""

    url: Annotated[str, Field(pattern=r"^https?://\S+$")]
    headers: Annotated[dict[str, Expanded], Field(repr=False)] = {}  # may hold secrets
    name: Annotated[str | None, Field(min_length=1, max_length=100)] = None
    # how long a call may take, not counting the time a person takes to answer its questions
    call_timeout_seconds: Annotated[float, Field(gt=0, le=24 * 3600)] = 300.0

    @property
    def label(self) -> str:
        return self.name or self.url


def _approval(value: Any) -> Any:
    """`approval: true` (all), a list of names, one name, or absent/false (none)."""
    if value is None or value is False:
        return []
    if isinstance(value, str):
        return [value]
    if value is True:
        return ["*"]
    if not isinstance(value, list):
        raise ValueError("must be true, false or a list of tool names")
    return value


Names = Annotated[tuple[Annotated[str, Field(min_length=1)], ...], BeforeValidator(_approval)]


class _Source(_Strict):
    approval: Names = ()
    redact: tuple[Annotated[str, Field(min_length=1)], ...] = ()
    # "Approve and allow here": for how long (0: not offered), scoped to which arguments' values
    grant_minutes: Annotated[int, Field(ge=0, le=7 * 24 * 60)] = 60
    grant_scope: tuple[Annotated[str, Field(min_length=1)], ...] = ()

    @field_validator("redact", "grant_scope", mode="before")
    @classmethod
    def _names(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @property
    def approve_all(self) -> bool:
        return "*" in self.approval

    @property
    def approval_names(self) -> tuple[str, ...]:
        return tuple(name for name in self.approval if name != "*")


class McpSourceConfig(_Source):
    mcp: McpServerConfig

    @property
    def label(self) -> str:
        return f"MCP server `{self.mcp.label}`"


class PythonSourceConfig(_Source):
    python: Annotated[
        str,
        Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$", description="module.path:callable"),
    ]
    name: Annotated[str | None, Field(pattern=TOOL_NAME.pattern)] = None
    description: str | None = None

    @property
    def label(self) -> str:
        return f"Python tool `{self.python}`"


class A2aSourceConfig(_Source):
    a2a: A2aAgentConfig

    @property
    def label(self) -> str:
        return f"A2A agent `{self.a2a.label}`"


def _source_kind(value: Any) -> str | None:
    """The union's tag (pydantic puts it in an error's location; it is no key of the file)."""
    if isinstance(value, Mapping):
        if "mcp" in value:
            return _MCP
        if "python" in value:
            return _PYTHON
        if "a2a" in value:
            return _A2A
    elif isinstance(value, McpSourceConfig):
        return _MCP
    elif isinstance(value, PythonSourceConfig):
        return _PYTHON
    elif isinstance(value, A2aSourceConfig):
        return _A2A
    return None


_MCP, _PYTHON, _A2A = "<mcp source>", "<python source>", "<a2a source>"


ToolSourceConfig = Annotated[
    Annotated[McpSourceConfig, Tag(_MCP)]
    | Annotated[PythonSourceConfig, Tag(_PYTHON)]
    | Annotated[A2aSourceConfig, Tag(_A2A)],
    Discriminator(
        _source_kind,
        custom_error_type="tool_source",
        custom_error_message=(
            "a tool source is a mapping with an `mcp:`, a `python:` or an `a2a:` key"
        ),
    ),
]


class SuggestedPrompt(_Strict):
    """A prompt offered in a new chat with the agent: its label, and the message it sends."""

    title: Annotated[str, Field(min_length=1, max_length=PROMPT_TITLE)]
    message: Annotated[str, Field(min_length=1, max_length=PROMPT_MESSAGE)]


DEFAULT_SUGGESTED_PROMPTS = (
    SuggestedPrompt(title="What can you do?", message="What can you do for me?"),
    SuggestedPrompt(
        title="What waits for me?", message="Which requests are waiting for my answer?"
    ),
)


def _human_tools(value: Any) -> Any:
    if value is None or value == "builtin":
        return list(BUILTIN_TOOL_NAMES)
    if value == "none":
        return []
    if isinstance(value, str):
        raise ValueError("must be builtin, none or a list of human tool names")
    return value


def _builtin_tool(name: str) -> str:
    if name not in BUILTIN_TOOL_NAMES:
        raise ValueError(f"unknown human tool {name!r} (one of {', '.join(BUILTIN_TOOL_NAMES)})")
    return name


class AgentConfig(_Strict):
    """The agent file, validated. `where(...)` names the line of a part of it."""

    system_prompt: Annotated[str, Field(min_length=1)] = DEFAULT_SYSTEM_PROMPT
    model: Annotated[str | None, Field(min_length=1)] = None
    human_tools: Annotated[
        tuple[Annotated[str, AfterValidator(_builtin_tool)], ...], BeforeValidator(_human_tools)
    ] = tuple(BUILTIN_TOOL_NAMES)
    tools: tuple[ToolSourceConfig, ...] = ()
    suggested_prompts: Annotated[
        tuple[SuggestedPrompt, ...], Field(min_length=1, max_length=MAX_SUGGESTED_PROMPTS)
    ] = DEFAULT_SUGGESTED_PROMPTS

    _lines: YamlLines | None = PrivateAttr(default=None)  # None: a config built in code

    def read_from(self, lines: YamlLines) -> None:
        """Remember the file and lines it was read from, for errors that name FILE:LINE."""
        self._lines = lines

    @property
    def file(self) -> Path | None:
        """The file it was read from (None for a config built in code)."""
        return self._lines.file if self._lines is not None else None

    @property
    def folder(self) -> Path:
        """Where relative paths in it are from: the file's folder (else the current one)."""
        return self._lines.file.parent if self._lines is not None else Path.cwd()

    def where(self, *path: str | int) -> str:
        """`FILE:LINE` of the nearest written part of `path` (`"tools", 0, "approval", 1`)."""
        if self._lines is None:
            return "the agent configuration"
        return self._lines.where(*path)

    def error(self, path: Sequence[str | int], message: str) -> ConfigurationError:
        """A one-line error at `path`: `FILE:LINE: field: message`."""
        return ConfigurationError(f"{self.where(*path)}: {shown_path(path)}: {message}")


# -- reading the file ---------------------------------------------------------------------------


def load_agent_file(path: str | os.PathLike[str]) -> AgentConfig:
    """The agent file at `path`, validated; ConfigurationError (one line, FILE:LINE) if not."""
    config, lines = load_yaml_model(path, AgentConfig, _WHAT)
    config.read_from(lines)
    return config


def parse_agent_file(text: str, file: Path) -> AgentConfig:
    """The agent file's text, validated (see `load_agent_file`)."""
    config, lines = parse_yaml_model(text, file, AgentConfig, _WHAT)
    config.read_from(lines)
    return config


_WHAT = "the agent file"


# -- what the file names -------------------------------------------------------------------------


def human_tool_names(config: AgentConfig) -> list[str]:
    """The built-in human tools the file asks for, in the built-in order."""
    wanted = set(config.human_tools)
    return [name for name in BUILTIN_TOOL_NAMES if name in wanted]
