"""A YAML file read into a pydantic model, with the line of each of its parts.

The configuration files (the agent file, the policy file) are written by people, so every error
is one line naming the file, the line and the field: `agent.yaml:7: tools[0].approval: ...`.
The lines are kept after reading too: an error found later (a name the MCP server does not
offer) names its line as well.

A file is refused, in one line and bounded memory, before it is turned into objects when it is
larger than `MAX_BYTES`, nests deeper than `MAX_DEPTH`, or its aliases expand to more than
`MAX_ALIASED` nodes (a "billion laughs" file: ten aliases of ten aliases of ... of one value is
a few hundred bytes, and walking it a billion nodes). The limits are counted as the file is
composed (PyYAML's safe loader, `_LimitedLoader`), so nothing big is built to find out.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

import yaml
from pydantic import BaseModel, ValidationError
from yaml.error import Mark
from yaml.events import AliasEvent, Event

from bot.errors import ConfigurationError

Location = tuple[str | int, ...]  # a part of the file: ("tools", 0, "approval")
Model = TypeVar("Model", bound=BaseModel)

MAX_BYTES = 1_000_000  # a configuration file written by a person is a few kilobytes
MAX_DEPTH = 64  # mappings and lists inside each other
MAX_ALIASED = 10_000  # nodes that aliases (`*name`) stand for, counted as if written out


class _OverLimit(yaml.MarkedYAMLError):
    """A file past one of the limits: `problem` says which, at `problem_mark`."""


class _LimitedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, which refuses (_OverLimit) to compose a file nesting deeper than
    MAX_DEPTH or whose aliases stand for more than MAX_ALIASED nodes, or for a node they are
    inside of (a cycle, which no reader of the data could walk to its end).

    Each node counts as it would be written out: an alias as the size of the node its anchor
    names. So a bomb is stopped at the alias that crosses the limit, a few hundred bytes in,
    while the few aliases a person writes (one list of approvers for two rules) cost nothing.
    (libyaml's loader is faster but reads some plain scalars otherwise, `[slack:]` say.)"""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._count = 0  # nodes so far, aliases written out
        self._aliased = 0  # of which aliases stood for
        self._sizes: dict[str, int] = {}  # each anchor's node's size, once composed

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        event: Event = self.peek_event()  # type: ignore[no-untyped-call]  # untyped in stubs
        if isinstance(event, AliasEvent):
            node = super().compose_node(parent, index)  # ComposerError if it names no anchor
            size = self._sizes.get(event.anchor or "")
            if size is None:
                raise _over(f"has an alias *{event.anchor} inside the node it names (a cycle)",
                            event)  # fmt: skip
            self._count += size
            self._aliased += size
            if self._aliased > MAX_ALIASED:
                raise _over(f"has aliases that expand to more than {MAX_ALIASED:,} nodes", event)
            return node
        if self._depth >= MAX_DEPTH:
            raise _over(f"nests deeper than {MAX_DEPTH} levels", event)
        start = self._count
        self._count += 1
        self._depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            self._sizes[anchor] = self._count - start
        return node


def _over(problem: str, event: Event) -> _OverLimit:
    return _OverLimit(problem=problem, problem_mark=cast(Mark | None, event.start_mark))


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
        with file.open("rb") as opened:
            raw = opened.read(MAX_BYTES + 1)  # no more than that is ever held
        _check_size(len(raw), file, what)
        text = raw.decode("utf-8")
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
    _check_size(len(text), file, what)  # characters: at least as many bytes
    try:
        loader = _LimitedLoader(text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except _OverLimit as err:
        mark = err.problem_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ConfigurationError(f"{file}{line}: {what} {err.problem}") from None
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


def _check_size(size: int, file: Path, what: str) -> None:
    if size > MAX_BYTES:
        raise ConfigurationError(
            f"{file}: {what} is larger than {MAX_BYTES:,} bytes, the most a configuration "
            "file may be (is it the right file?)"
        )


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
