"""Claude Code's side of a permission request, in its own formats. Pure.

`permission_prompt` (adapters/doors/mcp/tools.py) and the PreToolUse hook
(adapters/doors/mcp/hook.py) ask
a person whether a call of one of Claude Code's tools may run. Two of the person's choices mean
something only Claude Code can carry out, and are said in its terms:

- "approve and allow for this session": a rule Claude Code adds to its session's permissions
  (`updatedPermissions`: `{"type": "addRules", "rules": [{"toolName", "ruleContent"}],
  "behavior": "allow", "destination": "session"}`), so it no longer asks for what the rule
  covers. `session_rule` scopes it as narrowly as Claude Code's rules let us say plainly: a Bash
  command by its command prefix (`Bash(npm test:*)`; a compound command, with `;`, `&&`, `|`,
  `$(` and the like, is offered no rule: a prefix would not bound what it runs), a WebFetch by
  its domain (`WebFetch(domain:example.com)`), any other tool as a whole (`Edit`).
- "decline and stop": a deny with `interrupt: true`, which stops Claude Code's turn.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

BASH = "Bash"
WEB_FETCH = "WebFetch"
MAX_RULE = 200  # characters of a rule as a person reads it (the request's own limit)

_COMPOUND = re.compile(r"[;&|<>$`()\\\n\r{}]")  # the shell's operators, substitutions, escapes
_PROGRAM = re.compile(r"^[A-Za-z0-9_./+-]+$")  # a program's name or path (no VAR=value)
_SUBCOMMAND = re.compile(r"^[a-z][a-z0-9_-]*$")  # `test` in `npm test`, `commit` in `git commit`


@dataclass(frozen=True, slots=True)
class SessionRule:
    """A permission rule of Claude Code's: a tool, and what of its calls it covers (None: all)."""

    tool_name: str
    content: str | None = None

    @property
    def text(self) -> str:
        """The rule as Claude Code writes it (`Bash(npm test:*)`, `Edit`): what people read."""
        return f"{self.tool_name}({self.content})" if self.content else self.tool_name

    def update(self) -> dict[str, Any]:
        """The permission update that allows the rule for the rest of the session."""
        rule: dict[str, Any] = {"toolName": self.tool_name}
        if self.content:
            rule["ruleContent"] = self.content
        return {"type": "addRules", "rules": [rule], "behavior": "allow", "destination": "session"}


def session_rule(tool_name: str, tool_input: Mapping[str, Any]) -> SessionRule | None:
    """The rule "approve and allow for this session" adds for a call of `tool_name` with
    `tool_input`; None when no rule would bound it plainly (then it is not offered)."""
    if tool_name == BASH:
        prefix = command_prefix(tool_input.get("command"))
        rule = SessionRule(BASH, f"{prefix}:*") if prefix else None
    elif tool_name == WEB_FETCH:
        host = _host(tool_input.get("url"))
        rule = SessionRule(WEB_FETCH, f"domain:{host}") if host else None
    else:
        rule = SessionRule(tool_name)
    return rule if rule is not None and len(rule.text) <= MAX_RULE else None


def command_prefix(command: Any) -> str | None:
    """A simple command's program and, if the next word reads as one, its subcommand (`npm
    test` of `npm test -- --watch`, `ls` of `ls -la`); None for anything compound, empty or
    not text."""
    if not isinstance(command, str) or _COMPOUND.search(command):
        return None
    words = command.split()
    if not words or not _PROGRAM.match(words[0]):
        return None
    if len(words) > 1 and _SUBCOMMAND.match(words[1]):
        return f"{words[0]} {words[1]}"
    return words[0]


def _host(url: Any) -> str | None:
    if not isinstance(url, str):
        return None
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname
    except ValueError:
        return None
    return host if parts.scheme in ("http", "https") and host else None
