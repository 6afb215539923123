"""The one answering path (docs/architecture.md): an interaction in, a tagged outcome out.

A surface parses its payload into an `Interaction` (which request, who, what they did, the
inputs) and draws the `Outcome` the router returns. Everything in between is decided here, once
for every surface: loading the request (on any worker), who may answer, which control the verb
is, reading the form, building the answer, validating it, the settle, the audit of a refusal,
and the words of every notice.

A request whose policy rule needs several people (`required` approvals, `declines_required`
declines; bot/policies/tally.py) is answered by votes: each approval or decline of someone
allowed is a row (one per person), and the request settles as the click would have once
enough are in, the answer naming who approved; until then the vote is `Voted` and every
surface shows the tally. Votes count approvals, so only a request answered yes or no
(Approve or Confirm, and Decline) takes them: a question or a form is answered by one person.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from bot.audit.refusals import AuditedRequests, record_refused_answer
from bot.errors import AnswerInvalidError
from bot.human_input import HumanInputHandler, RequestUpdate
from bot.human_tools.forms import Form, FormResult, read_form
from bot.human_tools.tool import HumanTool
from bot.policies.deciders import Deciders, Verdict, not_yours
from bot.policies.policy_file import Rule
from bot.policies.rules import Policy
from bot.policies.tally import MemoryVotes, Tally, VoteBox, arguments_digest, needs_votes, tally
from bot.records import RequestRecord, RequestStatus, StoreUnavailableError, Vote
from bot.requests import wording
from bot.requests.access import AnswerPolicy
from bot.requests.kind_of import kind_of
from bot.requests.kinds import DECLINE, Control, Verb
from bot.requests.stored_requests import settled_record
from bot.words.phrases import Phrase

log = logging.getLogger(__name__)

HandlerLookup = Callable[[str], HumanInputHandler | None]

YES = frozenset({Verb.APPROVE, Verb.CONFIRM, Verb.EDIT, Verb.GRANT})  # an approving vote
NO = frozenset({Verb.DECLINE, Verb.CANCEL})  # a declining one
CHANGED = frozenset({Verb.EDIT, Verb.GRANT})  # not the call the others approve as it is


@dataclass(frozen=True, slots=True)
class Interaction:
    """What a person did to a request, in no platform's terms.

    `submitted` is False for a bare click on a control that asks for a form first (the router
    answers `NeedsForm`), True when the inputs are the person's answer (a modal, a card's inline
    inputs, an option's button, a thread reply, a line typed in the console).
    """

    request_id: str
    user_id: str
    verb: Verb
    inputs: Mapping[str, Any] = field(default_factory=dict)
    submitted: bool = True
    surface: str = ""
    aliases: tuple[str, ...] = ()  # other ids of the same person (Teams: AAD and 29: ids)
    name: str | None = None  # the person's display name, for the audit log


class Refusal(StrEnum):
    UNKNOWN = "unknown"
    SETTLED = "settled"
    NOT_YOURS = "not_yours"
    UNFIT = "unfit"
    UNAVAILABLE = "unavailable"
    VOTED = "voted"  # this person has voted on the request already


@dataclass(frozen=True, slots=True)
class Settled:
    """The answer was taken: `record` as it settled."""

    record: RequestRecord


@dataclass(frozen=True, slots=True)
class Refused:
    """Nothing was taken; `notice` says why, privately, to the person."""

    reason: Refusal
    notice: Phrase
    record: RequestRecord | None = None


@dataclass(frozen=True, slots=True)
class Invalid:
    """The inputs do not make an answer: `errors` by field name ("" for the form as a whole)."""

    record: RequestRecord
    form: Form | None
    errors: dict[str, str]


@dataclass(frozen=True, slots=True)
class NeedsForm:
    """The control asks for `form` first (a modal on Slack)."""

    record: RequestRecord
    form: Form


@dataclass(frozen=True, slots=True)
class Voted:
    """The vote was counted and the request waits for more: `tally` is the votes so far
    (every surface's message shows it: the core tells them)."""

    record: RequestRecord
    tally: Tally


Outcome = Settled | Refused | Invalid | NeedsForm | Voted


class Router:
    def __init__(
        self,
        *,
        store: AuditedRequests | None,
        handler_for: HandlerLookup,
        handlers: Sequence[HumanInputHandler] = (),
        policy: AnswerPolicy | None = None,
        tools: Mapping[str, HumanTool] | None = None,
        deciders: Deciders | None = None,
        votes: VoteBox | None = None,
    ) -> None:
        """`deciders` say who may answer (a policy file's rules, bot/policies/); without
        them, today's rule: the actor, `policy`'s approvers and admins. `votes` keeps the
        votes of requests several people decide: the store's rows (bot.store.votes) for
        several workers, or this process's memory without them."""
        self.store = store
        self.handler_for = handler_for
        self.handlers = handlers  # searched for a request when there is no store
        self.policy = policy or AnswerPolicy()
        self.tools: Mapping[str, HumanTool] = tools if tools is not None else {}
        self.deciders = deciders or Deciders(
            Policy.default(self.policy.approvers, self.policy.admins)
        )
        self.votes: VoteBox = votes if votes is not None else MemoryVotes()

    async def load(self, request_id: str) -> RequestRecord | None:
        """The request by id, from the store (any worker's), else from the handlers' memory."""
        if self.store is not None:
            return await self.store.get_request(request_id)
        for handler in self.handlers:
            request = handler.pending.get(request_id)
            if request is not None:
                return request
        return None

    async def may_answer(
        self, record: RequestRecord, user_id: str, aliases: Sequence[str] = ()
    ) -> bool:
        """Whether this person (by any of their ids) may answer the request."""
        return (await self.verdict(record, user_id, aliases)).allowed

    async def verdict(
        self, record: RequestRecord, user_id: str, aliases: Sequence[str] = ()
    ) -> Verdict:
        """Whether this person may answer the request, and if not, the notice saying why."""
        verdict = await self.deciders.check(record, (user_id, *aliases))
        if verdict.allowed or verdict.notice is not None:
            return verdict
        return Verdict(False, not_yours(record))

    def controls(self, record: RequestRecord) -> list[Control]:
        tool = self.tools.get(record.tool_name)
        return [*kind_of(record.tool_name, tool).controls(record.arguments), DECLINE]

    def form_for(self, record: RequestRecord, verb: Verb) -> Form | None:
        """The form the control for `verb` asks for (a surface reads its inputs by it)."""
        control = next((c for c in self.controls(record) if c.verb is verb), None)
        return control.form if control is not None else None

    def voting_rule(self, record: RequestRecord) -> Rule | None:
        """The rule of a request decided by votes (a yes-or-no request whose rule needs more
        than one person for either); None for one any single answer settles."""
        rule = self.deciders.rule(record)
        if not needs_votes(rule):
            return None
        yes_or_no = any(c.verb in (Verb.APPROVE, Verb.CONFIRM) for c in self.controls(record))
        return rule if yes_or_no else None

    async def tally_of(self, record: RequestRecord) -> Tally | None:
        """The votes so far on an open request decided by votes; None for any other, or
        before anyone voted."""
        rule = self.voting_rule(record) if record.status is RequestStatus.PENDING else None
        if rule is None:
            return None
        votes = await self.votes.votes(record.id)
        return tally(votes, arguments_digest(record.arguments), rule) if votes else None

    async def update(self, record: RequestRecord, tally: Tally | None = None) -> RequestUpdate:
        """The request as a surface draws it for someone now: with the votes so far (`tally`,
        else read) and, while it is open, who may answer it under its policy rule."""
        if tally is None:
            tally = await self.tally_of(record)
        pending = record.status is RequestStatus.PENDING
        audience = self.deciders.audience(record) if pending else None
        return RequestUpdate.of(record, tally=tally, audience=audience)

    def takes_replies(self, record: RequestRecord) -> bool:
        """Whether a reply in the conversation answers the request (a question)."""
        return kind_of(record.tool_name, self.tools.get(record.tool_name)).replies

    async def handle(
        self, interaction: Interaction, record: RequestRecord | None = None
    ) -> Outcome:
        """Decide `interaction`; pass `record` when the caller has just loaded it."""
        if record is None or record.id != interaction.request_id:
            record = await self.load(interaction.request_id)
        if record is None:
            return Refused(Refusal.UNKNOWN, wording.UNKNOWN)
        refused = await self._closed_to(record, interaction)
        if refused is not None:
            return refused
        control = next((c for c in self.controls(record) if c.verb is interaction.verb), None)
        if control is None:
            return Refused(Refusal.UNFIT, wording.UNFIT, record)
        rule = self.voting_rule(record)
        if rule is not None and rule.required > 1 and interaction.verb in CHANGED:
            return Refused(Refusal.UNFIT, wording.needs_approvals(rule.required), record)
        if rule is not None and interaction.verb is Verb.STOP:  # a vote cannot stop an agent
            return Refused(Refusal.UNFIT, wording.VOTES_DECIDE, record)
        if control.form is not None and not interaction.submitted:
            return NeedsForm(record, control.form)
        read = read_form(control.form, interaction.inputs) if control.form else FormResult()
        if read.errors:
            return Invalid(record, control.form, read.errors)
        if rule is not None and interaction.verb in YES | NO:
            return await self._vote(record, interaction, rule, read.values, control.form)
        if interaction.verb is Verb.DECLINE:
            return await self._settle(record, interaction, None, read.values.get("reason") or "")
        if interaction.verb is Verb.STOP:
            reason = wording.stop_reason(str(read.values.get("reason") or ""))
            return await self._settle(record, interaction, None, reason)
        answer = self._answer(record, interaction, read.values)
        if isinstance(answer, Invalid):
            return Invalid(record, control.form, field_errors(answer.errors, control.form))
        return await self._settle(record, interaction, answer, None)

    async def submit_answer(self, interaction: Interaction, answer: str) -> Outcome:
        """A whole answer, as JSON, from a protocol that carries answers rather than clicks
        (AG-UI's resume): the same checks as a click (the request is open, this person may
        answer it) and the tool's answer model validates it (`Invalid` and nothing settled
        otherwise). A request decided by votes takes clicks only."""
        record = await self.load(interaction.request_id)
        if record is None:
            return Refused(Refusal.UNKNOWN, wording.UNKNOWN)
        refused = await self._closed_to(record, interaction)
        if refused is not None:
            return refused
        if self.voting_rule(record) is not None:
            return Refused(Refusal.UNFIT, wording.VOTES_DECIDE, record)
        tool = self.tools.get(record.tool_name)
        kind = kind_of(record.tool_name, tool)
        try:
            payload = json.loads(answer)
        except ValueError:
            payload = answer
        problems = kind.check(payload, record.arguments) if kind.check is not None else {}
        if problems:
            return Invalid(record, None, problems)
        if tool is not None:
            try:
                answer = tool.parse_answer(record.arguments, answer)
            except AnswerInvalidError as err:
                return Invalid(record, None, err.fields or {"": str(err)})
        return await self._settle(record, interaction, answer, None)

    async def cancel(self, request_id: str, by: str, reason: str) -> Outcome:
        """An admin withdraws an open request (`by` was checked to be one): it settles as
        cancelled, its message says so with the reason, its waiter (the model) reads
        "Cancelled by an admin: <reason>" and the settle's audit line keeps both."""
        record = await self.load(request_id)
        if record is None:
            return Refused(Refusal.UNKNOWN, wording.UNKNOWN)
        if record.status is not RequestStatus.PENDING:
            return Refused(Refusal.SETTLED, wording.already_settled(record), record)
        handler = self.handler_for(record.channel_id)
        if handler is None:
            return Refused(Refusal.UNAVAILABLE, wording.UNAVAILABLE, record)
        try:
            won = await handler.cancel(record.id, wording.admin_cancel_reason(reason), by=by)
        except StoreUnavailableError as err:
            log.warning("could not record %s's cancel of %s: %s", by, record.id, err)
            return Refused(Refusal.UNAVAILABLE, wording.UNAVAILABLE, record)
        latest = (await settled_record(self.store, record.id) if self.store else None) or record
        if won:
            return Settled(latest)
        return Refused(Refusal.SETTLED, wording.already_settled(latest), latest)

    async def _vote(
        self,
        record: RequestRecord,
        interaction: Interaction,
        rule: Rule,
        values: Mapping[str, Any],
        form: Form | None,
    ) -> Outcome:
        """Cast the person's vote, then count: settled as the click would have once enough
        votes are in (the answer naming who approved), else `Voted` and the tally shown."""
        approve = interaction.verb in YES
        digest = arguments_digest(record.arguments)
        reason = None if approve else str(values.get("reason") or "") or None
        vote = Vote(record.id, interaction.user_id, approve, digest, datetime.now(UTC), reason)
        detail = {"surface": interaction.surface} if interaction.surface else {}
        if interaction.name:
            detail["name"] = interaction.name
        try:
            cast = await self.votes.cast(vote, detail)
            counted = tally(await self.votes.votes(record.id), digest, rule)
        except StoreUnavailableError as err:  # nothing was recorded: vote again later
            log.warning("could not record %s's vote on %s: %s", vote.voter, record.id, err)
            return Refused(Refusal.UNAVAILABLE, wording.UNAVAILABLE, record)
        if not cast:
            return Refused(Refusal.VOTED, wording.voted_already(counted.line), record)
        if counted.approved and (approve or not counted.declined):
            # Another's approval may have completed it meanwhile: answer as its Approve would.
            verb = interaction.verb if approve else self._yes(record)
            yes = dataclasses.replace(interaction, verb=verb)
            answer = self._answer(record, yes, values if approve else {}, counted.approvers)
            if isinstance(answer, Invalid):
                return Invalid(record, form, field_errors(answer.errors, form))
            settled = await self._settle(record, interaction, answer, None)
            return _as_counted(settled, RequestStatus.RESOLVED)
        if counted.declined:
            no: str | Invalid | None = None
            if interaction.verb is Verb.CANCEL:  # confirmAction's "no" is an answer
                no = self._answer(record, interaction, values)
            cancelled = no if isinstance(no, str) else None
            settled = await self._settle(record, interaction, cancelled, counted.reason)
            expected = RequestStatus.RESOLVED if cancelled is not None else RequestStatus.REJECTED
            return _as_counted(settled, expected)
        handler = self.handler_for(record.channel_id)
        if handler is not None:
            handler.show_again(record, counted, self.deciders.audience(record))
        return Voted(record, counted)

    def _yes(self, record: RequestRecord) -> Verb:
        """The request's plain approving verb (Approve, or Confirm)."""
        verbs = [c.verb for c in self.controls(record)]
        return Verb.APPROVE if Verb.APPROVE in verbs else Verb.CONFIRM

    def _answer(
        self,
        record: RequestRecord,
        interaction: Interaction,
        values: Mapping[str, Any],
        approved_by: Sequence[str] = (),
    ) -> str | Invalid:
        """The answer JSON (or verbatim text), checked by the tool's answer model if it has one;
        naming `approved_by` when several people's approvals settle it."""
        tool = self.tools.get(record.tool_name)
        kind = kind_of(record.tool_name, tool)
        payload = kind.answer(interaction.verb, values, interaction.inputs, record.arguments)
        if approved_by and isinstance(payload, dict):
            payload = {**payload, "approved_by": list(approved_by)}
        problems = kind.check(payload, record.arguments) if kind.check is not None else {}
        if problems:
            return Invalid(record, None, problems)
        answer = payload if isinstance(payload, str) else json.dumps(payload)
        if tool is None:
            return answer
        try:
            return tool.parse_answer(record.arguments, answer)
        except AnswerInvalidError as err:
            return Invalid(record, None, err.fields or {"": str(err)})

    async def _settle(
        self,
        record: RequestRecord,
        interaction: Interaction,
        answer: str | None,
        reason: str | None,
    ) -> Outcome:
        handler = self.handler_for(record.channel_id)
        if handler is None:
            log.error("no handler for channel %s of request %s", record.channel_id, record.id)
            return Refused(Refusal.UNAVAILABLE, wording.UNAVAILABLE, record)
        by = interaction.user_id
        who = {"surface": interaction.surface} if interaction.surface else {}
        if interaction.name:
            who["name"] = interaction.name
        try:
            # `record` was just read (load): the handler need not read it again, and settles
            # it in place if it wins without the request in its memory.
            known = dataclasses.replace(record) if self.store is not None else None
            if answer is not None:
                won = await handler.answer(record.id, answer, by=by, by_detail=who, known=known)
            else:
                won = await handler.decline(
                    record.id, reason or "", by=by, by_detail=who, known=known
                )
        except StoreUnavailableError as err:  # nothing was recorded: the request stays open
            log.warning("could not record %s's answer to %s: %s", by, record.id, err)
            return Refused(Refusal.UNAVAILABLE, wording.UNAVAILABLE, record)
        if won:  # as settled, from memory: no second read of the row
            settled = (
                known if known is not None and known.status is not RequestStatus.PENDING else None
            )
            latest = settled or await handler.request(record.id)
            if latest is None or latest.status is RequestStatus.PENDING:
                latest = _settled_copy(record, answer, reason, by)
            return Settled(latest)
        latest = await settled_record(self.store, record.id) if self.store is not None else None
        latest = latest or record
        return Refused(Refusal.SETTLED, wording.already_settled(latest), latest)

    async def _closed_to(self, record: RequestRecord, interaction: Interaction) -> Refused | None:
        """Why `interaction` cannot answer `record` whatever it says: the request is settled
        (this worker's wait for it takes up the outcome), or not this person's to answer
        (audited); None if it may."""
        if record.status is not RequestStatus.PENDING:
            await self._catch_up(record)
            return Refused(Refusal.SETTLED, wording.already_settled(record), record)
        verdict = await self.verdict(record, interaction.user_id, interaction.aliases)
        if not verdict.allowed:
            await self._audit_refusal(record, interaction)
            assert verdict.notice is not None
            return Refused(Refusal.NOT_YOURS, verdict.notice, record)
        return None

    async def _catch_up(self, record: RequestRecord) -> None:
        """A click on a request settled by another worker: a wait for it in this worker's
        memory takes up the outcome now. PostgreSQL's NOTIFY would tell it too; SQLite has
        none, and a lost NOTIFY (a dropped listener) would leave the wait to its deadline."""
        handler = self.handler_for(record.channel_id)
        if handler is not None:
            await handler.follow(record.id)

    async def _audit_refusal(self, record: RequestRecord, interaction: Interaction) -> None:
        if self.store is None:
            log.info("%s may not answer %s", interaction.user_id, record.id)
            return
        detail = {"name": interaction.name} if interaction.name else {}
        await record_refused_answer(
            self.store, record, interaction.user_id, interaction.surface, **detail
        )


def _as_counted(outcome: Outcome, expected: RequestStatus) -> Outcome:
    """The settle of a request decided by votes: if another voter's settle won the race
    meanwhile with the same outcome (their vote and this one completed it together), the
    votes decided it as this one would have, so it is settled for this voter too."""
    lost = isinstance(outcome, Refused) and outcome.reason is Refusal.SETTLED
    if lost and outcome.record is not None and outcome.record.status is expected:
        return Settled(outcome.record)
    return outcome


def field_errors(errors: Mapping[str, str], form: Form | None) -> dict[str, str]:
    """Errors keyed by an answer's keys, put on the form's fields (the first field, or the
    form as a whole, for a key no field has)."""
    names = [f.name for f in form.fields] if form is not None else []
    placed: dict[str, str] = {}
    for key, message in errors.items():
        target = key if key in names else (names[0] if names else "")
        placed.setdefault(target, message)
    return placed


def _settled_copy(
    record: RequestRecord, answer: str | None, reason: str | None, by: str
) -> RequestRecord:
    """The request as settled, for a handler without a store (the answer is in memory)."""
    status = RequestStatus.RESOLVED if answer is not None else RequestStatus.REJECTED
    return dataclasses.replace(
        record, status=status, result=answer, reason=reason, settled_by=by,
        settled_at=datetime.now(UTC),
    )  # fmt: skip
