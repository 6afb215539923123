"""Approval gates: a call of a gated tool runs only once a person approves it, exactly once.

The gate wraps the handler of the team's tools (bot/tool_sources/setup.py builds it with
`build_tool_handler(tools, gate=approval_gate(...))`). For a tool its rule gates:

1. a live grant for this room, actor and tool (bot/gates/grants.py) runs the call unasked;
2. otherwise the call becomes a request of the reserved tool `approveToolCall` to the turn's
   actor (and approvers, admins): the tool, its description, its arguments with the rule's
   redacted keys masked (bot/gates/approvals.py) and Approve / Approve and allow here /
   Edit / Decline (its kind in bot/requests/kinds.py). A run resumed after a restart waits on
   the request it already made for the call, as a human tool does;
3. declined, expired or undeliverable, the call does not run and the model reads why;
   approved, it runs with the call's arguments, or the edited ones (the model's result then
   starts with a line saying who edited what); approved by several people, as a policy may
   require (bot/policies/tally.py), the result starts with a line naming them.

Exactly once: a run is claimed by inserting its row (`gate_runs`, keyed by the approval's
request id) before the tool is called, so of every worker and retry that gets the approval,
the first to insert runs the tool and the others wait for its result; a worker that restarts
after the approval and before the claim finds none and runs the call; one that restarts
after the run finds its result. A claim whose worker died during the run (its lease, renewed
while the tool runs, lapsed) is never run again: its outcome is unknown, and the model is told
so. The run's outcome ("ok", or its error) is written on the request in the same transaction,
and the request is shown again with it, on every surface.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from bot.errors import (
    ExpiredWithAnswerError,
    HumanInputRejectedError,
    ToolCallError,
    ToolFailedError,
    ToolRefusedError,
    UndeliverableError,
)
from bot.gates.approvals import (
    MASK,
    approved_line,
    check_answer,
    check_default,
    declined_by_default,
    edit_changes,
    edit_line,
    fold,
    read_decision,
    read_request,
    request_arguments,
)
from bot.gates.grants import Grants
from bot.gates.runs import GateRunStore, MemoryGateRuns
from bot.human_input import HumanInputHandler, undeliverable_message
from bot.records import GateRun
from bot.tools import AITool, ToolHandler
from bot.tools.context import ToolCallContext, current_tool_context
from bot.words.tool_names import GATE_TOOL

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_SECONDS = 300.0
LEASE_SECONDS = 30.0  # a running call's claim is renewed every third of this
OUTCOME_SHOWN = 200  # characters of a run's outcome line
DEFAULTED = (
    "Nobody answered the approval in time: the call ran on the policy's default answer at expiry."
)
INTERRUPTED = (
    "The approved call of '{tool}' was interrupted: the worker running it stopped before it "
    "finished. It was not run again, so whether it took effect is unknown; check before "
    "calling it again."
)


class ApprovalRule(Protocol):
    """What the agent file says of one tool (bot/tool_sources/setup.py's rules have these)."""

    @property
    def needs_approval(self) -> bool: ...

    @property
    def redact(self) -> frozenset[str]: ...

    @property
    def grant_scope(self) -> frozenset[str]:
        """Argument names a grant is scoped to the values of (none: every call of the tool)."""
        ...

    @property
    def grant_seconds(self) -> float:
        """How long "approve and allow here" allows the tool (0: the control is not offered)."""
        ...


class ApprovalConfig(Protocol):
    def approval_for(self, tool_name: str) -> ApprovalRule | None: ...


Gate = Callable[[ToolHandler, Mapping[str, AITool], Any], ToolHandler]
"""What `build_tool_handler(tools, gate=...)` takes: (inner, tools by name, rules) -> the
gated handler; `config.approval_for(name)` gives each tool's rule."""


def approval_gate(
    handler: HumanInputHandler,
    *,
    runs: GateRunStore | None = None,
    grants: Grants | None = None,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
) -> Gate:
    """The gate to give `build_tool_handler`: requests made on `handler` (the AI channel's, so
    its surfaces show them and its router answers them), runs claimed in `runs` (the store;
    in memory without one), grants offered and honoured when `grants` is given."""

    def gate(inner: ToolHandler, tools: Mapping[str, AITool], config: Any) -> ToolHandler:
        return ToolGate(
            inner, tools, config.approval_for, handler=handler, runs=runs or MemoryGateRuns(),
            grants=grants, timeout=timeout,
        )  # fmt: skip

    return gate


Run = Callable[[], Awaitable[str]]


@dataclass
class ToolGate:
    """A tool handler that asks before it runs a gated tool (see the module's docstring)."""

    inner: ToolHandler
    tools: Mapping[str, AITool]
    rule_for: Callable[[str], ApprovalRule | None]
    handler: HumanInputHandler
    runs: GateRunStore = field(default_factory=MemoryGateRuns)
    grants: Grants | None = None
    timeout: float = DEFAULT_TIMEOUT_SECONDS
    lease_seconds: float = LEASE_SECONDS
    worker_id: str = ""

    def __post_init__(self) -> None:
        self.worker_id = self.worker_id or self.handler.worker_id
        # Answers to approval requests are checked wherever they come from (the router checks
        # them too, to show errors beside the Edit form's fields).
        self.handler.set_answer_validator(GATE_TOOL, check_answer)
        self.handler.set_expiry_validator(GATE_TOOL, check_default)

    async def __call__(self, name: str, arguments: dict[str, Any]) -> str:
        rule = self.rule_for(name) if name in self.tools else None
        if rule is None or not rule.needs_approval:
            return await self.inner(name, arguments)
        context = current_tool_context() or ToolCallContext()
        call_id = context.tool_call_id
        if context.resumed and call_id:
            asked = await self.handler.request_for_tool_call(call_id)
            if asked is not None:  # asked before the restart: wait on that request
                return await self._approved(name, arguments, asked, rule, context)
            if await self.runs.gate_run(f"call:{call_id}") is not None:
                # Run under a grant before the restart: its result, never a second run.
                return await self._granted_run(name, arguments, rule, call_id)
        if self.grants is not None and context.room_id:
            grant = await self.grants.covering(context.room_id, context.actor_id, name, arguments)
            if grant is not None:
                await self.grants.used(grant, tool_call_id=call_id)
                return await self._granted_run(name, arguments, rule, call_id)
        pending = await self.handler.create(
            GATE_TOOL,
            self._request(name, arguments, rule, context),
            room_id=context.room_id,
            tool_call_id=context.tool_call_id,
            channel_id=context.channel_id,
            channel_type=context.channel_type,
            actor_id=context.actor_id,
            timeout=self.timeout,
        )
        return await self._approved(name, arguments, pending.pending_id, rule, context)

    def _request(
        self, name: str, arguments: Mapping[str, Any], rule: ApprovalRule, context: ToolCallContext
    ) -> dict[str, Any]:
        tool = self.tools[name]
        offered = self.grants is not None and bool(context.room_id) and rule.grant_seconds > 0
        return request_arguments(
            tool=name,
            description=tool.description,
            schema=tool.parameters,
            arguments=arguments,
            redact=rule.redact,
            grant_seconds=rule.grant_seconds if offered else None,
        )

    def _call(self, name: str, arguments: dict[str, Any]) -> Run:
        return lambda: self.inner(name, arguments)

    async def _granted_run(
        self, name: str, arguments: dict[str, Any], rule: ApprovalRule, call_id: str
    ) -> str:
        """A call a grant covers: run once per tool call (a resumed run finds its result)."""
        if not call_id:
            return await self.inner(name, arguments)
        secrets_ = _secrets(arguments, rule.redact)
        return await self._run_once(
            f"call:{call_id}", None, name, secrets_, self._call(name, arguments)
        )

    # -- after the person's decision ----------------------------------------------------------

    async def _approved(
        self,
        name: str,
        arguments: dict[str, Any],
        request_id: str,
        rule: ApprovalRule,
        context: ToolCallContext,
    ) -> str:
        """Wait for the approval request's answer, then run the call once (as edited). At the
        deadline, the policy's default answer (`on_timeout`) decides as an answer would, and
        the model is told it did."""
        answer, expired = await self._wait(name, request_id)
        if expired:
            declined = declined_by_default(answer)
            if declined is not None:
                raise ToolFailedError(
                    f"Nobody approved the call of '{name}' in time, so it did not run: the "
                    "policy's default answer at expiry declined it"
                    + (f": {declined}" if declined else "")
                )
        try:
            decision = read_decision(answer)
        except ValueError as err:  # the handler's validator lets no such answer through
            raise ToolFailedError(f"The approval of '{name}' could not be read: {err}") from None
        record = await self.handler.request(request_id)
        by = record.settled_by if record is not None else None
        run_arguments, edit = dict(arguments), None
        if decision.arguments is not None:
            editable = read_request(record.arguments).editable if record is not None else set()
            kept = {k: v for k, v in arguments.items() if k not in editable}
            before = {k: v for k, v in arguments.items() if k in editable}
            run_arguments = {**kept, **decision.arguments}
            edit = edit_line(by, edit_changes(before, decision.arguments))
        if (
            decision.grant
            and not expired
            and self.grants is not None
            and context.room_id
            and rule.grant_seconds
        ):
            await self.grants.grant(
                room_id=context.room_id, actor_id=context.actor_id, tool_name=name,
                arguments=run_arguments, scope=rule.grant_scope, redact=rule.redact,
                seconds=rule.grant_seconds, granted_by=by,
                request_id=request_id,
            )  # fmt: skip
        secrets_ = _secrets(run_arguments, rule.redact) | _secrets(arguments, rule.redact)
        # Lines the model reads above the result: who approved (when it took several), the edit
        said = [
            line
            for line in (DEFAULTED if expired else None, approved_line(decision.approved_by), edit)
            if line is not None
        ]
        try:
            result = await self._run_once(
                request_id, request_id, name, secrets_, self._call(name, run_arguments)
            )
        except ToolCallError as err:
            if not said:
                raise
            error = ToolRefusedError if isinstance(err, ToolRefusedError) else ToolFailedError
            raise error("\n".join([*said, err.reason])) from None
        return "\n".join([*said, result])

    async def _wait(self, name: str, request_id: str) -> tuple[str, bool]:
        """The approval's answer and whether it is the policy's default at expiry; what the
        model reads (the tool did not run) otherwise."""
        try:
            return await self.handler.wait(request_id, timeout=self.timeout), False
        except ExpiredWithAnswerError as expired:
            return expired.answer, True
        except HumanInputRejectedError as rejected:
            raise ToolRefusedError(
                f"Rejected: {rejected}" if str(rejected) else "Rejected"
            ) from None
        except TimeoutError:
            message = f"Nobody approved the call of '{name}' in time, so it did not run"
            raise ToolFailedError(message) from None
        except UndeliverableError as undelivered:
            raise ToolFailedError(undeliverable_message(str(undelivered))) from None

    # -- the run, once ------------------------------------------------------------------------

    async def _run_once(
        self, key: str, request_id: str | None, name: str, secrets_: frozenset[str], run: Run
    ) -> str:
        """Claim the run `key` and run it; or, claimed already, the result of that run."""
        now = datetime.now(UTC)
        lease = timedelta(seconds=self.lease_seconds)
        claim = GateRun(key, name, self.worker_id, now, now + lease, request_id=request_id)
        existing = await self.runs.claim_gate_run(claim)
        if existing is not None:
            return self._replayed(await self._finished(existing), secrets_)
        renewing = asyncio.ensure_future(self._renew(key))
        try:
            result = await run()
        except ToolCallError as err:
            refused = isinstance(err, ToolRefusedError)
            said = ("refused: " if refused else "error: ") + err.reason
            await self._finish(claim, secrets_, error=err.reason, refused=refused, outcome=said)
            raise
        except asyncio.CancelledError:  # cut while it ran: whether it took effect is unknown
            message = INTERRUPTED.format(tool=name)
            with contextlib.suppress(Exception):
                await asyncio.shield(
                    self._finish(claim, secrets_, error=message, outcome="interrupted")
                )
            raise
        except Exception as err:
            said = f"error: the tool failed ({type(err).__name__})"
            await self._finish(claim, secrets_, error=f"Tool '{name}' failed", outcome=said)
            raise
        finally:
            renewing.cancel()
        await self._finish(claim, secrets_, result=result, outcome="ok")
        return result

    async def _renew(self, key: str) -> None:
        """Keep the claim's lease while the tool runs: others see its worker alive."""
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            until = datetime.now(UTC) + timedelta(seconds=self.lease_seconds)
            try:
                await self.runs.renew_gate_run(key, self.worker_id, until)
            except Exception as err:
                log.warning("could not renew the claim of run %s: %s", key, err)

    async def _finish(
        self,
        claim: GateRun,
        secrets_: frozenset[str],
        *,
        outcome: str,
        result: str | None = None,
        error: str | None = None,
        refused: bool = False,
    ) -> None:
        """Record the run's end and show its outcome on the request. A failed write is
        logged, not raised: the run happened, and its caller gets its result."""
        line = _one_line(outcome, secrets_)
        done = replace(claim, finished_at=datetime.now(UTC), result=result, error=error,
                       refused=refused, outcome=line)  # fmt: skip
        try:
            recorded = await self.runs.finish_gate_run(done)
        except Exception:
            log.exception("could not record the run %s of %s", claim.key, claim.tool_name)
            return
        if not recorded:
            log.warning("run %s of %s was recorded by another worker", claim.key, claim.tool_name)
            return
        if claim.request_id is not None:
            await self.handler.show_run_outcome(claim.request_id, line)

    async def _finished(self, run: GateRun) -> GateRun:
        """The run claimed by another worker (or before a restart) once it has finished, or
        once its lease lapsed unfinished (its worker is gone): recorded as interrupted."""
        delay = 0.01
        while run.finished_at is None:
            if run.lease_until < datetime.now(UTC):
                message = INTERRUPTED.format(tool=run.tool_name)
                await self._finish(run, frozenset(), error=message, outcome="interrupted")
                return await self.runs.gate_run(run.key) or replace(run, error=message)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.5)
            run = await self.runs.gate_run(run.key) or run
        return run

    @staticmethod
    def _replayed(run: GateRun, secrets_: frozenset[str]) -> str:
        if run.error is not None:
            error = ToolRefusedError if run.refused else ToolFailedError
            raise error(run.error)
        if run.finished_at is None:
            raise ToolFailedError(INTERRUPTED.format(tool=run.tool_name))
        return run.result or ""


def _secrets(arguments: Mapping[str, Any], redact: Iterable[str]) -> frozenset[str]:
    """The text of every redacted value in `arguments` (to mask it in what people are shown)."""
    names = frozenset(redact)
    found: set[str] = set()

    def collect(node: Any, hidden: bool) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                collect(value, hidden or key in names)
        elif isinstance(node, list):
            for item in node:
                collect(item, hidden)
        elif hidden and node is not None and not isinstance(node, bool):
            text = str(node)
            if len(text) >= 4:  # shorter ones would mask ordinary words
                found.add(text)

    collect(dict(arguments), False)
    return frozenset(found)


def _one_line(text: str, secrets_: frozenset[str]) -> str:
    """An outcome as shown under the request: one line, redacted values masked, folded."""
    for secret in sorted(secrets_, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return fold(" ".join(text.split()), OUTCOME_SHOWN)
