"""The agent: a tool loop over the Anthropic Messages API (the only module importing anthropic).

One turn: the person's text goes into the room's transcript, the model answers, every tool call
of a round runs concurrently (human tools pause until a person answers), the results go back,
and the loop repeats until the model stops calling tools. The transcript is saved at every tool
boundary, so a run can be picked up again from the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import jsonschema

from bot.agent.hooks import HookContext, HookRegistry, HookTrigger, ToolCallEvent
from bot.agent.provider import (
    INTERRUPTED,
    AIProvider,
    AssistantTurn,
    ReplyInterruptedError,
    TextCallback,
)
from bot.agent.steps import NoSteps, RunSteps, ToolStep, outcome_line
from bot.agent.transcript import append_user_text, cancelled_results, open_round, text_of
from bot.durable.leases import RunLeases
from bot.errors import ToolCallError, ToolRefusedError, UnservedToolCallError
from bot.human_tools.tool import HumanInputToolHandler
from bot.tools import AITool, ToolHandler
from bot.tools.context import ToolCallContext, tool_turn_context
from bot.words.visible_text import visible

log = logging.getLogger(__name__)


class Transcripts(Protocol):
    """The store's port for transcripts (the `transcripts` table): one per room and agent."""

    async def save_transcript(
        self, room_id: str, channel_id: str, messages: list[dict[str, Any]]
    ) -> None:
        """Replace the agent transcript of one room (saved at every tool boundary)."""
        ...

    async def load_transcript(self, room_id: str, channel_id: str) -> list[dict[str, Any]]: ...


@dataclass(slots=True)
class _Outcome:
    """How one tool call ended, as the model will read it."""

    content: str
    is_error: bool = False
    refused: bool = False
    detail: str | None = None
    arguments: dict[str, Any] | None = None  # what ran, when a hook replaced the model's


@dataclass
class AIChannel:
    """An agent that serves every room it is asked in; its tools run per call, concurrently."""

    channel_id: str
    provider: AIProvider
    system_prompt: str = ""
    tool_handler: ToolHandler | None = None
    human_input_handler: HumanInputToolHandler | None = None
    tools: Iterable[AITool] = ()
    # Tools that come and go (an MCP server's list changes): read at the start of every turn.
    tool_catalog: Callable[[], Iterable[AITool]] | None = None
    max_rounds: int = 20
    stream_retries: int = 1  # a reply cut short is asked for again this many times
    channel_type: str = "ai"
    hooks: HookRegistry = field(default_factory=HookRegistry)
    store: Transcripts | None = None
    runs: RunLeases | None = None  # with a store: which worker runs each room
    busy_patience: float = 300.0  # how long a turn waits for another worker's turn in its room
    suspended: bool = False  # shutting down: a cut turn leaves its transcript for a resume
    _transcripts: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    _room_locks: dict[str, asyncio.Lock] = field(default_factory=dict)
    _halted: set[str] = field(default_factory=set)
    _warned: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.tools = list(self.tools)
        human = self.human_input_handler
        for name in sorted(human.tool_names if human else ()):
            if name not in self.offered_tools:
                self._warn_once(name, "serves tool '%s' but never offers it to the model")

    @property
    def offered_tools(self) -> dict[str, AITool]:
        human = self.human_input_handler.tool_definitions if self.human_input_handler else []
        live = list(self.tool_catalog()) if self.tool_catalog is not None else []
        return {tool.name: tool for tool in [*self.tools, *live, *human]}

    def _warn_once(self, name: str, message: str) -> None:
        if name not in self._warned:
            self._warned.add(name)
            log.warning("channel %s " + message, self.channel_id, name)

    # -- a turn -------------------------------------------------------------------------

    async def respond(
        self,
        room_id: str,
        text: str,
        *,
        actor_id: str | None = None,
        on_text: TextCallback | None = None,
        steps: RunSteps | None = None,
    ) -> str:
        """Run one turn for `actor_id`'s message in `room_id`; returns all the model wrote.

        `on_text` is given each of the model's replies once complete, before its tool calls
        run, so a surface can post "I'll ask for approval" ahead of the request itself.
        `steps` is told the turn as it happens (bot/agent/steps.py): the reply piece by
        piece, each tool call's start and end.
        """
        on_text, watch = _shown(on_text), steps or NoSteps()
        async with self._room_run(room_id, actor_id):
            messages = await self._load(room_id)
            if self.runs is not None and (calls := open_round(messages)):
                # A run cut short that no worker adopted yet: finish its round first (a human
                # tool waits on the request it made) rather than close it unanswered.
                await self._finish_round(room_id, messages, calls, actor_id, watch)
            append_user_text(messages, text)
            await self._save(room_id, messages)
            return await self._run_rounds(room_id, messages, actor_id, on_text, watch)

    async def _finish_round(
        self,
        room_id: str,
        messages: list[dict[str, Any]],
        calls: list[dict[str, Any]],
        actor_id: str | None,
        steps: RunSteps,
    ) -> None:
        """Run an open round's calls as a resumed run does, and save their results."""
        offered = self.offered_tools
        results = await asyncio.gather(
            *(self._run_tool(c, offered, room_id, actor_id, steps, resumed=True) for c in calls)
        )
        messages.append({"role": "user", "content": results})
        await self._save(room_id, messages)

    async def resume(
        self,
        room_id: str,
        *,
        actor_id: str | None = None,
        on_text: TextCallback | None = None,
        steps: RunSteps | None = None,
    ) -> str:
        """Carry on a run cut short (its worker restarted or died) from the saved transcript.

        The open round's calls run again, a human tool waiting on the request it had made
        (answered meanwhile or not); then the turn goes on as respond() would.
        """
        on_text, watch = _shown(on_text), steps or NoSteps()
        async with self._room_run(room_id, actor_id, adopted=True):
            messages = await self._load(room_id)
            calls = open_round(messages)
            if calls:
                await self._finish_round(room_id, messages, calls, actor_id, watch)
            elif not messages:
                return ""
            elif messages[-1]["role"] == "assistant":
                # The turn had ended but its run was left open: its worker stopped after
                # saving the model's last words and before ending the run, maybe before those
                # words were posted (they are saved first). Post them (again): a reply is lost
                # otherwise, and posted twice only if the stop fell after the post.
                text = text_of(messages[-1])
                if text and on_text is not None:
                    await on_text(text)
                return text
            return await self._run_rounds(room_id, messages, actor_id, on_text, watch)

    def halt(self, room_id: str) -> None:
        """Ask the model nothing more in the turn running in `room_id` (someone stopped it):
        at its next round it ends as a cancelled turn does, whatever its tools returned."""
        self._halted.add(room_id)

    @contextlib.asynccontextmanager
    async def _room_run(
        self, room_id: str, actor_id: str | None, *, adopted: bool = False
    ) -> AsyncIterator[None]:
        """One turn at a time per room: in this process (a lock), across workers (the run)."""
        lock = self._room_locks.setdefault(room_id, asyncio.Lock())
        async with lock:
            self._halted.discard(room_id)  # a halt that came as an earlier turn was ending
            runs = self.runs
            if runs is not None and not adopted:
                acquired = await runs.acquire(
                    room_id, self.channel_id, actor_id, patience=self.busy_patience
                )
                if not acquired:
                    raise RuntimeError(f"room {room_id} is busy with another turn")
            try:
                yield
            except BaseException:
                # Cut while shutting down: the run stays open, for another worker to resume.
                if runs is not None and not self.suspended:
                    await asyncio.shield(runs.finish(room_id, self.channel_id))
                raise
            finally:
                self._halted.discard(room_id)
            # A turn that ended ends its run, shutting down or not: left open, it would be
            # adopted and its last words posted again.
            if runs is not None:
                await asyncio.shield(runs.finish(room_id, self.channel_id))

    async def _run_rounds(
        self,
        room_id: str,
        messages: list[dict[str, Any]],
        actor_id: str | None,
        on_text: TextCallback | None,
        steps: RunSteps,
    ) -> str:
        offered = self.offered_tools
        texts: list[str] = []
        for _ in range(self.max_rounds):
            if room_id in self._halted:
                raise asyncio.CancelledError(f"the turn in {room_id} was stopped")
            turn = await self._generate(room_id, messages, offered, actor_id, steps)
            if turn is None:  # cut short every time: nothing of it is used, the person is told
                texts.append(INTERRUPTED)
                if on_text is not None:
                    await on_text(INTERRUPTED)
                return "\n\n".join(texts)
            messages.append({"role": "assistant", "content": turn.content})
            # Until its results are saved, a turn cancelled here must leave every tool_use with
            # a result: a save the cancellation cut short may have committed already.
            try:
                await self._save(room_id, messages)
                if turn.text:
                    texts.append(turn.text)
                    if on_text is not None:
                        await on_text(turn.text)
                if not turn.tool_calls:
                    return "\n\n".join(texts)
                results = await asyncio.gather(
                    *(
                        self._run_tool(call, offered, room_id, actor_id, steps)
                        for call in turn.tool_calls
                    )
                )
                messages.append({"role": "user", "content": results})
                await self._save(room_id, messages)
            except asyncio.CancelledError:
                if self.suspended:  # shutting down: the transcript waits for a resume as it is
                    raise
                if turn.tool_calls and messages[-1]["role"] == "assistant":
                    messages.append(cancelled_results(turn.tool_calls))
                await asyncio.shield(self._save(room_id, messages))
                raise
        texts.append(f"(stopped after {self.max_rounds} rounds of tool calls)")
        return "\n\n".join(texts)

    async def _generate(
        self,
        room_id: str,
        messages: list[dict[str, Any]],
        offered: dict[str, AITool],
        actor_id: str | None,
        steps: RunSteps,
    ) -> AssistantTurn | None:
        """The model's next complete turn; a reply cut short is asked for again
        (`stream_retries` times), and None if every one was cut.

        The human tool calls a cut reply announced ("Preparing…") never become requests:
        their announcements are closed once the turn is known, except one the complete reply
        makes again under the same id (it goes on to be asked).
        """
        announced: dict[str, str] = {}  # tool_use id -> tool name, over every attempt

        def started(name: str, call_id: str) -> None:
            if self._preparing(name, call_id, room_id, actor_id):
                announced[call_id] = name

        turn: AssistantTurn | None = None
        reason = INTERRUPTED

        def wrote(delta: str) -> None:
            steps.text(visible(delta))

        try:
            for attempt in range(self.stream_retries + 1):
                steps.thinking()
                try:
                    turn = await self.provider.generate(
                        system=self.system_prompt,
                        messages=messages,
                        tools=list(offered.values()),
                        on_tool_start=started,
                        on_text_delta=wrote,
                    )
                    break
                except ReplyInterruptedError as err:
                    steps.discarded()
                    again = attempt < self.stream_retries
                    log.warning("room %s: the model's reply was interrupted (%s)%s", room_id,
                                err, ", asking again" if again else "")  # fmt: skip
        except asyncio.CancelledError:
            reason = "The turn was cancelled"
            raise
        except Exception:
            reason = "The agent's reply failed"
            raise
        finally:
            kept = {call["id"] for call in turn.tool_calls} if turn is not None else set()
            for call_id, name in announced.items():
                if call_id not in kept:
                    self._drop_preparing(name, call_id, room_id, actor_id, reason)
        return turn

    def _preparing(self, name: str, call_id: str, room_id: str, actor_id: str | None) -> bool:
        """Announce a human tool's call as it streams in; whether it was announced."""
        human = self.human_input_handler
        if human is None or name not in human.tool_names or name not in self.offered_tools:
            return False
        human.handler.announce_preparing(
            name, {}, room_id=room_id, tool_call_id=call_id, channel_id=self.channel_id,
            channel_type=self.channel_type, actor_id=actor_id,
        )  # fmt: skip
        return True

    def _drop_preparing(
        self,
        name: str,
        call_id: str,
        room_id: str,
        actor_id: str | None,
        reason: str,
        *,
        arguments: dict[str, Any] | None = None,
    ) -> None:
        """Close the "Preparing…" message of a call that was announced and is not asked."""
        human = self.human_input_handler
        if human is not None and not human.handler.asked(call_id):
            human.handler.announce_dropped(
                name, arguments or {}, room_id=room_id, tool_call_id=call_id,
                channel_id=self.channel_id, channel_type=self.channel_type, actor_id=actor_id,
                reason=reason,
            )  # fmt: skip

    # -- one tool call --------------------------------------------------------------------

    async def _run_tool(
        self,
        call: dict[str, Any],
        offered: dict[str, AITool],
        room_id: str,
        actor_id: str | None,
        steps: RunSteps,
        *,
        resumed: bool = False,
    ) -> dict[str, Any]:
        name, call_id = call["name"], call["id"]
        arguments: dict[str, Any] = call.get("input") or {}
        event = ToolCallEvent(name, arguments, call_id, room_id, self.channel_id, actor_id)
        context = HookContext(room_id=room_id, channel_id=self.channel_id)
        steps.tool_started(ToolStep(call_id, name, arguments))
        try:
            outcome = await self._decide(event, offered, context, actor_id, resumed)
        except asyncio.CancelledError:
            steps.tool_finished(ToolStep(call_id, name, arguments, False, "cancelled"))
            self._drop_announced(event, "The turn was cancelled")
            self.hooks.fire(HookTrigger.ON_TOOL_CALL, _ended(event, cancelled=True), context)
            raise
        line = outcome_line(outcome.content, is_error=outcome.is_error)
        steps.tool_finished(ToolStep(call_id, name, arguments, not outcome.is_error, line))
        if outcome.refused:
            self._drop_announced(event, outcome.detail or "Refused")
        ended = _ended(event, outcome=outcome)
        await self.hooks.run(HookTrigger.ON_TOOL_CALL, ended, context)
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id}
        block["content"] = outcome.content
        if outcome.is_error:
            block["is_error"] = True
        return block

    async def _decide(
        self,
        event: ToolCallEvent,
        offered: dict[str, AITool],
        context: HookContext,
        actor_id: str | None,
        resumed: bool,
    ) -> _Outcome:
        tool = offered.get(event.tool_name)
        if tool is None:
            self._warn_once(event.tool_name, "dropped a call to '%s', a tool it does not offer")
            message = f"Tool '{event.tool_name}' is not available in this conversation"
            return _Outcome(json.dumps({"error": message}), is_error=True, refused=True)
        gate = await self.hooks.run(HookTrigger.BEFORE_TOOL_USE, event, context)
        if gate.blocked:
            reason = gate.reason or "Blocked by BEFORE_TOOL_USE hook"
            return _Outcome(json.dumps({"error": reason}), is_error=True, refused=True)
        arguments = event.arguments
        if "arguments" in gate.metadata:
            arguments = gate.metadata["arguments"]
            problem = _schema_problem(tool, arguments)
            if problem is not None:
                error = ToolRefusedError(f"Replacement arguments rejected: {problem}")
                return _Outcome(error.message, is_error=True, refused=True)
        call_context = ToolCallContext(
            room_id=event.room_id, channel_id=self.channel_id, channel_type=self.channel_type,
            tool_call_id=event.tool_call_id, actor_id=actor_id, resumed=resumed,
        )  # fmt: skip
        with tool_turn_context(call_context):
            outcome = await self._dispatch(event.tool_name, arguments)
        if arguments is not event.arguments:
            outcome.arguments = arguments
        return outcome

    def _drop_announced(self, event: ToolCallEvent, reason: str) -> None:
        """Close a "Preparing…" message for a human tool call that asked nobody (or was cut)."""
        human = self.human_input_handler
        if human is None or event.tool_name not in human.tool_names:
            return
        if event.tool_name in self.offered_tools:  # announced, as _preparing decided
            self._drop_preparing(
                event.tool_name, event.tool_call_id, event.room_id, event.actor_id, reason,
                arguments=event.arguments,
            )  # fmt: skip

    async def _dispatch(self, name: str, arguments: dict[str, Any]) -> _Outcome:
        human = self.human_input_handler
        try:
            if human is not None and name in human.tool_names:
                return _Outcome(await human(name, arguments))
            if self.tool_handler is None:
                raise UnservedToolCallError(name)
            return _Outcome(await self.tool_handler(name, arguments))
        except ToolCallError as err:
            refused = isinstance(err, ToolRefusedError | UnservedToolCallError)
            return _Outcome(err.message, is_error=True, refused=refused, detail=err.reason)
        except Exception as err:  # the model reads that it failed, never the message
            log.exception("tool %s failed", name)
            failed = json.dumps({"error": f"Tool '{name}' failed"})
            return _Outcome(failed, is_error=True, detail=f"{type(err).__name__}: {err}")

    # -- transcript -----------------------------------------------------------------------

    async def _load(self, room_id: str) -> list[dict[str, Any]]:
        if self.store is not None:
            return await self.store.load_transcript(room_id, self.channel_id)
        return self._transcripts.setdefault(room_id, [])

    async def _save(self, room_id: str, messages: list[dict[str, Any]]) -> None:
        if self.store is not None:
            await self.store.save_transcript(room_id, self.channel_id, messages)

    async def transcript(self, room_id: str) -> list[dict[str, Any]]:
        """The room's messages as the model sees them."""
        return list(await self._load(room_id))


def _schema_problem(tool: AITool, arguments: Any) -> str | None:
    try:
        jsonschema.validate(arguments, tool.parameters)
    except jsonschema.ValidationError as err:
        return str(err.message)
    return None


def _ended(
    event: ToolCallEvent, *, outcome: _Outcome | None = None, cancelled: bool = False
) -> ToolCallEvent:
    if outcome is None:
        return ToolCallEvent(**{**_fields(event), "is_error": True, "cancelled": cancelled})
    return ToolCallEvent(
        **{
            **_fields(event),
            "arguments": outcome.arguments if outcome.arguments is not None else event.arguments,
            "result": outcome.content,
            "is_error": outcome.is_error,
            "refused": outcome.refused,
            "error_detail": outcome.detail,
        }
    )


def _fields(event: ToolCallEvent) -> dict[str, Any]:
    names = ("tool_name", "arguments", "tool_call_id", "room_id", "channel_id", "actor_id")
    return {name: getattr(event, name) for name in names}


def _shown(on_text: TextCallback | None) -> TextCallback | None:
    """`on_text` given the model's words as a person may read them (bot/words/visible_text.py):
    a reply is cleaned as a request's arguments are, whichever surface posts it."""
    if on_text is None:
        return None
    post = on_text

    async def shown(text: str) -> None:
        await post(visible(text))

    return shown
