"""A YAML file read into any pydantic model, its lines kept for errors found later."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from bot.config.agent_file import load_agent_file, parse_agent_file
from bot.config.yaml_file import MAX_BYTES, YamlLines, load_yaml_model, shown_path
from bot.errors import ConfigurationError
from bot.policies import load_policy_file


class Service(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    ports: list[int] = []


class Services(BaseModel):
    model_config = ConfigDict(extra="forbid")

    services: list[Service]


def test_a_model_and_the_line_of_each_part(tmp_path: Path) -> None:
    path = tmp_path / "services.yaml"
    path.write_text("services:\n  - name: ledger\n    ports:\n      - 80\n      - 443\n")
    services, lines = load_yaml_model(path, Services, "the services file")
    assert services.services[0].ports == [80, 443]
    assert lines.where("services", 0, "ports", 1) == f"{path}:5"
    assert lines.where("services", 0, "name") == f"{path}:2"
    assert lines.line("services", 0, "missing") == 2  # the nearest written part
    error = lines.error(("services", 0, "ports", 1), "port 443 is taken")
    assert str(error) == f"{path}:5: services[0].ports[1]: port 443 is taken"


def test_the_file_is_named_as_the_caller_says(tmp_path: Path) -> None:
    path = tmp_path / "services.yaml"
    path.write_text("- ledger\n")
    with pytest.raises(ConfigurationError) as failed:
        load_yaml_model(path, Services, "the services file")
    assert str(failed.value) == f"{path}:1: the services file must be a mapping"
    with pytest.raises(ConfigurationError) as failed:
        load_yaml_model(tmp_path / "none.yaml", Services, "the services file")
    assert str(failed.value) == f"{tmp_path / 'none.yaml'}: the services file does not exist"


def test_an_error_in_the_file_as_a_whole(tmp_path: Path) -> None:
    path = tmp_path / "services.yaml"
    path.write_text("# nothing yet\n")
    with pytest.raises(ConfigurationError) as failed:
        load_yaml_model(path, Services, "the services file")
    assert str(failed.value) == f"{path}: services: a required key is missing"


def test_lines_of_nothing_written_name_the_file() -> None:
    lines = YamlLines(Path("x.yaml"))
    assert lines.where("services", 0) == "x.yaml"
    assert str(lines.error((), "empty")) == "x.yaml: the file: empty"


def test_a_path_as_a_person_reads_it() -> None:
    assert shown_path(("tools", 0, "mcp", "headers")) == "tools[0].mcp.headers"
    assert shown_path(()) == ""


# -- files past the limits: refused in one line, before anything big is built ------------------

MEMORY_BOUND = 8 * 2**20  # bytes allocated at the peak of refusing any of them


def bomb(levels: int = 9) -> str:
    """A "billion laughs": each level a list of nine aliases of the level before."""
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]" for n in range(1, levels)]
    return "\n".join(lines) + "\n"


PAST_LIMITS = {
    # 9**6 nodes: enough to cost a reader without the limit ~100 MB, and no minutes.
    "billion-laughs": (bomb(6), ":5: {what} has aliases that expand to more than 10,000 nodes"),
    "nested": ("rules: " + "[" * 100 + "]" * 100 + "\n", ":1: {what} nests deeper than 64 levels"),
    "nested-blocks": (
        "".join(f"{' ' * depth}k{depth}:\n" for depth in range(100)),
        ":64: {what} nests deeper than 64 levels",
    ),
    "a-cycle": ("rules: &loop [*loop]\n", ":1: {what} has an alias *loop inside the node it names"),
    "1-MB-and-1-byte": (
        "#" * (MAX_BYTES + 1),
        ": {what} is larger than 1,000,000 bytes, the most a configuration file may be",
    ),
}
READERS: dict[str, tuple[Callable[[Path], object], str]] = {
    "policy": (load_policy_file, "the policy file"),
    "agent": (load_agent_file, "the agent file"),
}


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("case", PAST_LIMITS)
def test_a_file_past_a_limit_is_refused_in_one_line_and_bounded_memory(
    tmp_path: Path, reader: str, case: str
) -> None:
    load, what = READERS[reader]
    text, said = PAST_LIMITS[case]
    path = tmp_path / f"{case}.yaml"
    path.write_text(text)
    tracemalloc.start()
    try:
        with pytest.raises(ConfigurationError) as failed:
            load(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    message = str(failed.value)
    assert "\n" not in message
    assert message.startswith(f"{path}{said.format(what=what)}")
    assert peak < MEMORY_BOUND


def test_the_limit_holds_for_text_given_too(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as failed:
        parse_agent_file(bomb(), tmp_path / "agent.yaml")
    assert str(failed.value).startswith(f"{tmp_path / 'agent.yaml'}:5: the agent file has aliases")


def test_a_file_with_a_few_aliases_reads(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(
        "rules:\n"
        "  - match: {tool: deploy}\n"
        "    approvers: &leads [slack:U0ALICE001, slack:U0BOB00001]\n"
        "  - match: {tool: restart}\n"
        "    approvers: *leads\n"
    )
    deploy, restart = load_policy_file(path).rules
    assert deploy.approvers == restart.approvers and len(restart.approvers) == 2


def test_a_file_of_just_under_the_size_reads(tmp_path: Path) -> None:
    path = tmp_path / "services.yaml"
    header = "services:\n  - name: ledger\n"
    path.write_text(header + "#" * (MAX_BYTES - len(header) - 1) + "\n")
    services, _ = load_yaml_model(path, Services, "the services file")
    assert services.services[0].name == "ledger"
