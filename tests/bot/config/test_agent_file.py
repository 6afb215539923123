"""The agent file: what it may say, and every error one line naming its file, line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config.agent_file import (
    DEFAULT_SUGGESTED_PROMPTS,
    DEFAULT_SYSTEM_PROMPT,
    McpSourceConfig,
    PythonSourceConfig,
    load_agent_file,
)
from bot.errors import ConfigurationError
from bot.human_tools.tool import BUILTIN_TOOLS

ROOT = Path(__file__).resolve().parents[3]


def written(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "agent.yaml"
    path.write_text(text)
    return path


def error_of(path: Path) -> str:
    with pytest.raises(ConfigurationError) as failed:
        load_agent_file(path)
    message = str(failed.value)
    assert "\n" not in message
    return message


def test_the_contract_s_example_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPS_TOKEN", "s3cret")
    path = written(tmp_path, """\
system_prompt: |
  You run releases for the payments team.
model: claude-sonnet-5-5
human_tools: [AskUserQuestion, requestApproval]
tools:
  - mcp:
      command: [python, ops_server.py]
      env: {OPS_TOKEN: "${OPS_TOKEN}"}
    approval: [deploy, rollback]
    redact: [password, token]
  - mcp:
      url: https://ops.example/mcp
      headers: {Authorization: "Bearer ${OPS_TOKEN}"}
  - python: mypackage.tools:restart_service
    approval: true
""")  # fmt: skip
    config = load_agent_file(path)
    assert config.system_prompt == "You run releases for the payments team.\n"
    assert config.model == "claude-sonnet-5-5"
    assert config.human_tools == ("AskUserQuestion", "requestApproval")
    stdio, remote, python = config.tools
    assert isinstance(stdio, McpSourceConfig) and isinstance(remote, McpSourceConfig)
    assert stdio.mcp.command == ["python", "ops_server.py"]
    assert stdio.mcp.env == {"OPS_TOKEN": "s3cret"}
    assert "s3cret" not in repr(config)  # env and headers stay out of logs
    assert stdio.approval_names == ("deploy", "rollback") and not stdio.approve_all
    assert stdio.redact == ("password", "token")
    assert remote.mcp.headers == {"Authorization": "Bearer s3cret"}
    assert remote.approval == () and remote.mcp.label == "https://ops.example/mcp"
    assert isinstance(python, PythonSourceConfig) and python.approve_all
    assert config.where("tools", 0, "approval", 1) == f"{path}:9"
    assert config.folder == tmp_path


def test_an_empty_file_is_the_defaults(tmp_path: Path) -> None:
    config = load_agent_file(written(tmp_path, "# nothing yet\n"))
    assert config.system_prompt == DEFAULT_SYSTEM_PROMPT
    assert config.model is None
    assert config.human_tools == tuple(BUILTIN_TOOLS)
    assert config.tools == ()
    assert config.suggested_prompts == DEFAULT_SUGGESTED_PROMPTS


def test_human_tools_none(tmp_path: Path) -> None:
    assert load_agent_file(written(tmp_path, "human_tools: none\n")).human_tools == ()


def test_the_example_s_agent_file_reads() -> None:
    config = load_agent_file(ROOT / "examples" / "ops" / "agent.yaml")
    (ops,) = config.tools
    assert isinstance(ops, McpSourceConfig)
    assert ops.approval_names == ("deploy", "rollback")


def test_a_missing_key(tmp_path: Path) -> None:
    path = written(tmp_path, "tools:\n  - mcp:\n      args: [--verbose]\n    approval: true\n")
    assert error_of(path) == (
        f"{path}:2: tools[0].mcp: give either `command` (a server run over stdio) or `url`"
    )


def test_a_tool_source_of_no_known_kind(tmp_path: Path) -> None:
    path = written(tmp_path, "tools:\n  - approval: true\n    shell: ./deploy.sh\n")
    kinds = "an `mcp:`, a `python:` or an `a2a:` key"
    assert error_of(path) == f"{path}:2: tools[0]: a tool source is a mapping with {kinds}"


def test_a_wrong_type(tmp_path: Path) -> None:
    path = written(tmp_path, "system_prompt: ops\nmodel: 5\n")
    assert error_of(path) == f"{path}:2: model: Input should be a valid string"


def test_a_wrong_type_deep_in_a_list(tmp_path: Path) -> None:
    path = written(tmp_path, """\
tools:
  - mcp:
      command: [python, ops.py]
    approval:
      - deploy
      - 3
""")  # fmt: skip
    assert error_of(path) == f"{path}:6: tools[0].approval[1]: Input should be a valid string"


def test_approval_of_another_shape(tmp_path: Path) -> None:
    path = written(tmp_path, "tools:\n  - mcp: {command: ops}\n    approval: {deploy: yes}\n")
    assert error_of(path) == (
        f"{path}:3: tools[0].approval: must be true, false or a list of tool names"
    )


def test_an_unknown_key(tmp_path: Path) -> None:
    path = written(tmp_path, "system_prompt: ops\nmodle: claude\n")
    assert error_of(path) == f"{path}:2: modle: unknown key"


def test_an_unknown_human_tool(tmp_path: Path) -> None:
    path = written(tmp_path, "human_tools:\n  - AskUserQuestion\n  - askMe\n")
    assert error_of(path).startswith(f"{path}:3: human_tools[1]: unknown human tool 'askMe' (")


def test_url_and_command_together(tmp_path: Path) -> None:
    path = written(tmp_path, "tools:\n  - mcp: {command: ops, url: 'https://x/mcp'}\n")
    assert error_of(path).startswith(f"{path}:2: tools[0].mcp: give either `command`")


def test_an_unset_environment_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HITL_NO_SUCH_TOKEN", raising=False)
    path = written(tmp_path, """\
tools:
  - mcp:
      url: https://ops.example/mcp
      headers:
        Authorization: Bearer ${HITL_NO_SUCH_TOKEN}
""")  # fmt: skip
    assert error_of(path) == (
        f"{path}:5: tools[0].mcp.headers.Authorization: the environment variable "
        "HITL_NO_SUCH_TOKEN is not set"
    )


def test_several_errors_are_counted_on_the_one_line(tmp_path: Path) -> None:
    path = written(tmp_path, "model: 5\nsystem_prompt: 7\n")
    assert error_of(path).endswith("Input should be a valid string (and 1 more)")


def test_invalid_yaml_names_its_line(tmp_path: Path) -> None:
    path = written(tmp_path, "tools:\n  - mcp: {command: ops\n")
    assert error_of(path).startswith(f"{path}:3: not valid YAML: ")


def test_not_a_mapping(tmp_path: Path) -> None:
    path = written(tmp_path, "- just\n- a list\n")
    assert error_of(path) == f"{path}:1: the agent file must be a mapping"


def test_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nowhere.yaml"
    assert error_of(path) == f"{path}: the agent file does not exist"


def test_a_grant_longer_than_a_week(tmp_path: Path) -> None:
    path = written(tmp_path, "tools:\n  - mcp: {command: ops}\n    grant_minutes: 20000\n")
    assert error_of(path) == (
        f"{path}:3: tools[0].grant_minutes: Input should be less than or equal to 10080"
    )


def test_suggested_prompts(tmp_path: Path) -> None:
    text = "suggested_prompts:\n  - title: Deploy\n    message: Deploy api to staging.\n"
    (prompt,) = load_agent_file(written(tmp_path, text)).suggested_prompts
    assert (prompt.title, prompt.message) == ("Deploy", "Deploy api to staging.")


def test_at_most_four_suggested_prompts_each_short(tmp_path: Path) -> None:
    five = "suggested_prompts:\n" + "  - {title: T, message: M}\n" * 5
    path = written(tmp_path, five)
    assert error_of(path).startswith(f"{path}:1: suggested_prompts: ")
    assert "at most 4 items" in error_of(path)
    long_title = "suggested_prompts:\n  - {title: " + "t" * 76 + ", message: M}\n"
    path = written(tmp_path, long_title)
    assert "suggested_prompts[0].title: String should have at most 75 characters" in error_of(path)
    path = written(tmp_path, "suggested_prompts:\n  - {title: T}\n")
    assert "suggested_prompts[0].message: a required key is missing" in error_of(path)
