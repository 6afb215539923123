"""A YAML file read into any pydantic model, its lines kept for errors found later."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from bot.errors import ConfigurationError
from bot.yaml_file import YamlLines, load_yaml_model, shown_path


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
