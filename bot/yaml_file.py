"""A YAML file read into a pydantic model, with the line of each of its parts.

The configuration files (the agent file, the policy file) are written by people, so every error
is one line naming the file, the line and the field: `agent.yaml:7: tools[0].approval: ...`.
The lines are kept after reading too: an error found later (a name the MCP server does not
offer) names its line as well.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from bot.errors import ConfigurationError

Location = tuple[str | int, ...]  # a part of the file: ("tools", 0, "approval")
Model = TypeVar("Model", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class YamlLines:
    """Where each part of a file was written: a mapping entry's key line, a list item's line."""

    file: Path
    lines: Mapping[Location, int] = field(default_factory=dict)

    def line(self, *path: str | int) -> int | None:
        """The line of the nearest written part of `path` (a missing key: its mapping's)."""
        for end in range(len(path), -1, -1):
            line = self.lines.get(tuple(path[:end]))
            if line is not None:
                return line
        return None

    def where(self, *path: str | int) -> str:
        """`FILE:LINE` of the nearest written part of `path` (`"tools", 0, "approval", 1`)."""
        line = self.line(*path)
        return f"{self.file}:{line}" if line is not None else str(self.file)

    def error(self, path: Sequence[str | int], message: str) -> ConfigurationError:
        """A one-line error at `path`: `FILE:LINE: field: message`."""
        return ConfigurationError(
            f"{self.where(*path)}: {shown_path(path) or 'the file'}: {message}"
        )


def load_yaml_model(
    path: str | os.PathLike[str], model_type: type[Model], what: str
) -> tuple[Model, YamlLines]:
    """The YAML file at `path` validated as `model_type`, and its lines; ConfigurationError (one
    line, FILE:LINE) if not. `what` names the file in messages ("the agent file")."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigurationError(f"{file}: {what} does not exist") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigurationError(f"{file}: cannot read {what}: {err}") from None
    return parse_yaml_model(text, file, model_type, what)


def parse_yaml_model(
    text: str, file: Path, model_type: type[Model], what: str
) -> tuple[Model, YamlLines]:
    """A YAML file's text validated as `model_type` (see `load_yaml_model`). An empty file is
    an empty mapping."""
    try:
        data = yaml.safe_load(text)
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = " ".join(str(err.problem or err.context or "invalid YAML").split())
        raise ConfigurationError(f"{file}{line}: not valid YAML: {problem}") from None
    except yaml.YAMLError as err:
        raise ConfigurationError(f"{file}: not valid YAML: {_one_line(str(err))}") from None
    lines: dict[Location, int] = {}
    if node is not None:
        _collect_lines(node, (), lines)
    written = YamlLines(file, lines)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigurationError(f"{file}:{lines.get((), 1)}: {what} must be a mapping")
    try:
        model = model_type.model_validate(data)
    except ValidationError as err:
        raise _validation_error(err, written, data) from None
    return model, written


def shown_path(path: Sequence[str | int]) -> str:
    """A part of the file as a person reads it: `tools[0].mcp.headers`."""
    shown = ""
    for part in path:
        shown += f"[{part}]" if isinstance(part, int) else (f".{part}" if shown else part)
    return shown


def _collect_lines(node: yaml.Node, path: Location, lines: dict[Location, int]) -> None:
    """Each part's line: a mapping entry's key line, a list item's own line."""
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            child = (*path, str(key.value))
            lines[child] = key.start_mark.line + 1
            _collect_lines(value, child, lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _collect_lines(item, (*path, index), lines)


def _validation_error(err: ValidationError, lines: YamlLines, data: Any) -> ConfigurationError:
    """The first error, at its line, and how many more (one line: the fix is one at a time)."""
    errors = err.errors()
    first = errors[0]
    path = _written_path(first["loc"], data)
    message = str(first["msg"]).removeprefix("Value error, ")
    if first["type"] == "missing":
        message = "a required key is missing"
    elif first["type"] == "extra_forbidden":
        message = "unknown key"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return lines.error(path, f"{message}{more}")


def _written_path(loc: Sequence[str | int], data: Any) -> list[str | int]:
    """The error's location as written in the file: pydantic's union tags (`mcp`,
    `function-after[...]`) skipped, a missing key kept at the end."""
    path: list[str | int] = []
    node = data
    for index, part in enumerate(loc):
        written = isinstance(node, dict) and part in node
        listed = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        if written or listed:
            node = node[part]
        elif index == len(loc) - 1 and isinstance(node, dict) and isinstance(part, str):
            path.append(part)  # a missing key
            break
        else:
            continue
        path.append(part)
    return path


def _one_line(text: str) -> str:
    return " ".join(text.split())
