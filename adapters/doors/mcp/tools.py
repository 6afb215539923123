"""The MCP door's tools, over `Doors` (bot/doors/service.py): what each is called and takes, and
what its result says. No transport here: adapters/doors/mcp/server.py serves these over HTTP.

Five tools ask a person with a built-in human tool (ask_question is AskUserQuestion, and so
on), each with an optional `to`, `timeout_seconds` and `wait_seconds`. A call waits up to
`wait_seconds` (45 by default: under the 60 s many clients allow a call) and returns the
answer as structured content (the built-in tool's answer, plus `request_id`, `status`,
`answered_by`), or `{"status": "pending", "request_id": ...}`: then `await_answer` waits on.
A request that ends without an answer (declined, expired, cancelled, undeliverable) is a tool
error saying so, with the reason.

`permission_prompt` is Claude Code's `--permission-prompt-tool`: an approval gate (Approve,
Edit, Decline) whose result is `{"behavior": "allow", "updatedInput": ...}` or
`{"behavior": "deny", "message": ...}`. Claude Code cannot poll a pending permission, so this
one tool waits until the request settles (its expiry ends every wait; 60 s polls in between,
the HTTP stream kept alive by the SDK's pings). A call the client abandons (its connection
closed, or the call cancelled) withdraws its request: nobody is left to act on the answer.
Its `tool_use_id` is accepted and not used: every call asks anew.
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

import anyio
import mcp_types as types
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from adapters.doors.mcp import schemas
from adapters.doors.mcp.claude_code import session_rule
from adapters.doors.mcp.results import answer_result, permission, permission_meta, refusal, result
from adapters.serve.http_limits import one_line
from bot.doors.addresses import MAX_ADDRESS
from bot.doors.long_polls import TooManyPolls
from bot.doors.service import MAX_WAIT, Ask, DoorError, Doors, RequestBody
from bot.human_tools.tool import BUILTIN_TOOLS
from bot.records import StoreUnavailableError

log = logging.getLogger(__name__)

DEFAULT_WAIT = 45.0  # seconds a call waits for its answer before it says pending
AWAIT_ANSWER = "await_answer"
PERMISSION_PROMPT = "permission_prompt"
RESERVED = ("request_id", "status", "answered_by")  # keys of ours beside an answer's
CANCEL_BUDGET = 5.0  # seconds to withdraw an abandoned permission request


@dataclass(frozen=True, slots=True)
class AskTool:
    """An MCP tool that asks with a built-in human tool."""

    name: str
    builtin: str
    title: str
    returns: str  # what an answer looks like, for the description


ASK_TOOLS = {
    tool.name: tool
    for tool in (
        AskTool("ask_question", "AskUserQuestion", "Ask a person a question",
                '{"answer": "..."}'),
        AskTool("request_approval", "requestApproval", "Ask a person to approve an action",
                '{"approved": true}'),
        AskTool("select_option", "selectOption", "Ask a person to pick an option",
                '{"selectedIndex": 0, "selectedValue": "..."}'),
        AskTool("collect_data", "collectUserData", "Ask a person to fill in a form",
                "each field's name with its value"),
        AskTool("confirm_action", "confirmAction", "Ask a person to confirm an action",
                '{"confirmed": true} or {"confirmed": false}'),
    )
}  # fmt: skip

_WAITING = (
    " Waits up to wait_seconds for the answer; without one by then the result is "
    '{"status": "pending", "request_id": ...}: call await_answer with that request_id. The '
    "answer comes with request_id, status and answered_by. A declined request is an error with "
    "the person's reason; so is one that expired unanswered."
)


# -- arguments ------------------------------------------------------------------------------


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # a number is a number, not "100"


Seconds = Annotated[float, Field(allow_inf_nan=False)]
AddressText = Annotated[str, Field(min_length=1, max_length=MAX_ADDRESS)]


class AskOptions(_Args):
    """What every asking tool takes beside its built-in tool's arguments."""

    to: AddressText | None = Field(None, description="Who to ask.")
    timeout_seconds: Seconds | None = Field(
        None, description="How long the person has to answer before the request expires."
    )
    wait_seconds: Seconds = Field(
        DEFAULT_WAIT, ge=0, le=MAX_WAIT,
        description="How long this call waits for the answer before it returns pending.",
    )  # fmt: skip


class AwaitArgs(_Args):
    request_id: str = Field(min_length=1, max_length=64, description="The pending request's id.")
    wait_seconds: Seconds = Field(
        DEFAULT_WAIT, ge=0, le=MAX_WAIT, description="How long to wait for the answer."
    )


class PermissionArgs(BaseModel):
    """What Claude Code sends (more keys it may add later are ignored)."""

    model_config = ConfigDict(extra="ignore", strict=True)

    tool_name: str = Field(min_length=1, max_length=200, description="The tool to run.")
    input: dict[str, Any] = Field(description="The tool call's input.")
    tool_use_id: str | None = Field(None, description="The tool call's id.")
    to: AddressText | None = Field(None, description="Who to ask.")
    timeout_seconds: Seconds | None = Field(
        None, description="How long the person has to answer before the call is denied."
    )
    grant: bool = Field(
        True, description='Offer "approve and allow for this session": the result then adds '
        "Claude Code's session rule (updatedPermissions).",
    )  # fmt: skip
    stop: bool = Field(
        True, description='Offer "decline and stop": the deny then interrupts Claude Code.'
    )


M = TypeVar("M", bound=BaseModel)


def _parsed(model: type[M], tool: str, arguments: Mapping[str, Any]) -> M:
    """`arguments` read by `model`; DoorError naming each bad field."""
    try:
        return model.model_validate(arguments)
    except ValidationError as err:
        errors = {".".join(str(p) for p in e["loc"]) or "arguments": e["msg"] for e in err.errors()}
        listed = "; ".join(f"{k}: {v}" for k, v in errors.items())
        raise DoorError(f"invalid arguments for {tool}: {listed}", errors=errors) from None


def split_options(tool: str, arguments: Mapping[str, Any]) -> tuple[AskOptions, dict[str, Any]]:
    """An asking tool's options, and the rest: its built-in tool's arguments."""
    own = {k: v for k, v in arguments.items() if k in AskOptions.model_fields}
    rest = {k: v for k, v in arguments.items() if k not in AskOptions.model_fields}
    return _parsed(AskOptions, tool, own), rest


def reserved_fields(arguments: Mapping[str, Any]) -> list[str]:
    """collect_data's field names that would collide with the keys beside its answer."""
    fields = arguments.get("fields")
    listed = fields if isinstance(fields, list) else []
    names = [f.get("name") for f in listed if isinstance(f, dict)]
    return [name for name in RESERVED if name in names]


# -- definitions ------------------------------------------------------------------------------


def _schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    schema.pop("description", None)  # the model's docstring is ours, not the caller's
    for spec in schema.get("properties", {}).values():
        spec.pop("title", None)
        if "default" in spec and spec["default"] is None:
            del spec["default"]
        nullable = spec.pop("anyOf", None)  # `X | None`: shown as X, optional
        if nullable:
            spec.update(next(s for s in nullable if s.get("type") != "null"))
    return schema


def _to_description(default_to: str | None) -> str:
    where = (
        "Who to ask: slack:<user id> (a direct message), slack:<channel id>, "
        "slack:<channel id>/<user id> (in the channel, for that person), any Slack form with "
        "@<thread ts>, teams:<conversation id>[/<AAD object id>], or email:<address>."
    )
    return f"{where} Default: {default_to}." if default_to else f"{where} Required."


def definitions(default_to: str | None, default_timeout: float) -> list[types.Tool]:
    """The tools, as tools/list shows them."""
    options = _schema(AskOptions)["properties"]
    options["to"]["description"] = _to_description(default_to)
    options["timeout_seconds"]["description"] += f" Default: {default_timeout:g} seconds."
    tools = []
    for tool in ASK_TOOLS.values():
        builtin = BUILTIN_TOOLS[tool.builtin]
        schema = builtin.definition().parameters
        schema.pop("title", None)
        schema["properties"] = {**schema["properties"], **copy.deepcopy(options)}
        description = f"{builtin.description} The answer: {tool.returns}.{_WAITING}"
        tools.append(types.Tool(name=tool.name, title=tool.title, description=description,
                                input_schema=schema,
                                output_schema=schemas.asked(tool.builtin)))  # fmt: skip
    waiting = _schema(AwaitArgs)
    tools.append(types.Tool(
        name=AWAIT_ANSWER, title="Wait for an answer", input_schema=waiting,
        output_schema=schemas.asked(*(tool.builtin for tool in ASK_TOOLS.values())),
        description="Wait for the answer to a request that was pending: the same result as "
        "the call that asked, or pending again.",
    ))  # fmt: skip
    permission = _schema(PermissionArgs)
    permission["properties"]["to"]["description"] = _to_description(default_to)
    tools.append(types.Tool(
        name=PERMISSION_PROMPT, title="Ask a person whether a tool call may run",
        input_schema=permission, output_schema=schemas.PERMISSION,
        description="Claude Code's --permission-prompt-tool: a person approves the call, edits "
        'its input, or declines it. Returns {"behavior": "allow", "updatedInput": {...}} or '
        '{"behavior": "deny", "message": "..."}; waits until the person answers or the '
        "request expires.",
    ))  # fmt: skip
    return tools


# -- calls ------------------------------------------------------------------------------------


class UnknownToolError(Exception):
    """A call of a tool that is not one of ours: the MCP tools spec's protocol error (-32602
    "Unknown tool"), not a result with isError."""

    def __init__(self, name: str) -> None:
        known = ", ".join([*ASK_TOOLS, AWAIT_ANSWER, PERMISSION_PROMPT])
        super().__init__(f"Unknown tool: {one_line(name, 60)} (the tools are {known})")


class McpTools:
    """The tools of one bridge, called on behalf of a requester (a token's name)."""

    def __init__(self, doors: Doors, *, default_to: str | None = None) -> None:
        self.doors = doors
        self.default_to = default_to
        self._definitions = definitions(default_to, doors.default_timeout)

    def definitions(self) -> list[types.Tool]:
        return list(self._definitions)

    async def call(
        self, requester: str, name: str, arguments: Mapping[str, Any]
    ) -> types.CallToolResult:
        """Run tool `name`; what it cannot do is a tool error, never an exception, but for a
        tool that does not exist (UnknownToolError: a protocol error, not the tool's)."""
        try:
            if name == PERMISSION_PROMPT:
                return await self._permission(requester, arguments)
            if name == AWAIT_ANSWER:
                waited = _parsed(AwaitArgs, name, arguments)
                body = await self.doors.get(requester, waited.request_id, waited.wait_seconds)
                return answer_result(body)
            tool = ASK_TOOLS.get(name)
            if tool is None:
                raise UnknownToolError(name)
            return await self._ask(requester, tool, arguments)
        except (DoorError, TooManyPolls) as err:
            return refusal(str(err))
        except StoreUnavailableError as err:
            log.warning("MCP: the store is unavailable: %s", err)
            return refusal("the bridge cannot reach its database now: try again shortly")

    async def _ask(
        self, requester: str, tool: AskTool, arguments: Mapping[str, Any]
    ) -> types.CallToolResult:
        options, rest = split_options(tool.name, arguments)
        _parsed(BUILTIN_TOOLS[tool.builtin].arguments, tool.name, rest)  # errors named as ours
        clashes = reserved_fields(rest) if tool.builtin == "collectUserData" else []
        if clashes:
            taken = ", ".join(clashes)
            raise DoorError(f"field names {taken} are taken: the result has them beside the answer")
        ask = Ask(tool.builtin, rest, self._to(options.to), options.timeout_seconds, door="mcp")
        body, _ = await self.doors.ask(requester, ask)
        if body["status"] == "pending" and options.wait_seconds > 0:
            with contextlib.suppress(TooManyPolls):  # asked: pending, for await_answer
                body = await self.doors.get(requester, body["id"], options.wait_seconds)
        return answer_result(body)

    async def _permission(
        self, requester: str, arguments: Mapping[str, Any]
    ) -> types.CallToolResult:
        try:
            asked = _parsed(PermissionArgs, PERMISSION_PROMPT, arguments)
            gate = Ask("", {}, self._to(asked.to), asked.timeout_seconds, door="mcp")
            rule = session_rule(asked.tool_name, asked.input) if asked.grant else None
            body, _ = await self.doors.ask_gate(
                requester, asked.tool_name, asked.input, gate,
                grant_rule=rule.text if rule is not None else None, stop=asked.stop,
            )  # fmt: skip
            body = await self._settled(requester, body, asked.timeout_seconds)
        except (DoorError, StoreUnavailableError, TooManyPolls) as err:
            # Claude Code reads a deny best.
            denied = {"behavior": "deny", "message": f"The person could not be asked: {err}"}
            return result(denied)
        settled = result(permission(body, asked.input, rule))
        settled.meta = permission_meta(body)
        return settled

    async def _settled(
        self, requester: str, body: RequestBody, timeout: float | None
    ) -> RequestBody:
        """`body` once it settles (its expiry settles it), waited on in long polls; the
        request withdrawn if the call is abandoned meanwhile."""
        lifetime = timeout if timeout is not None else self.doors.default_timeout
        try:
            with anyio.move_on_after(lifetime + 2 * MAX_WAIT):  # an expiry that never came
                while body["status"] == "pending":
                    body = await self.doors.get(requester, body["id"], MAX_WAIT)
        except (anyio.get_cancelled_exc_class(), TooManyPolls):
            await self._withdraw(requester, body["id"])
            raise
        if body["status"] == "pending":
            await self._withdraw(requester, body["id"])
        return body

    async def _withdraw(self, requester: str, request_id: str) -> None:
        """Cancel the request (shielded: the call itself may be being cancelled); a failure is
        logged, the request then expires in its own time."""
        try:
            with anyio.move_on_after(CANCEL_BUDGET, shield=True):
                await self.doors.cancel(requester, request_id)
        except (DoorError, StoreUnavailableError) as err:
            log.warning("MCP: could not withdraw the abandoned request %s: %s", request_id, err)

    def _to(self, to: str | None) -> str:
        if to:
            return to
        if self.default_to:
            return self.default_to
        why = "who to ask: slack:<user or channel id>, teams:<conversation id> or email:<address>"
        raise DoorError(f"`to` is needed (this bridge has no default): {why}",
                        errors={"to": "required"})  # fmt: skip
