"""The kinds of request a tool asks, not the model: an approval gate in front of a tool call,
and an MCP server's elicitation during one. Shown and answered like any other kind."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.gates import approvals
from bot.human_tools.forms import Form, form_from_schema
from bot.requests.arguments import text_of
from bot.requests.kinds import (
    STOP,
    Args,
    Control,
    Fact,
    Kind,
    Payload,
    Style,
    Verb,
    filled_facts,
    raw_facts,
)

# -- an MCP server's elicitation (bot/tool_sources/elicitation.py)
# -------------------------------------


def _elicit_url(args: Args) -> str:
    url = text_of(args, "url")
    return url if args.get("mode") == "url" and url.startswith(("https://", "http://")) else ""


def _elicit_host(url: str) -> str:
    return url.split("://", 1)[-1].split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]


def _elicit_facts(args: Args) -> list[Fact]:
    facts = [Fact("", text_of(args, "message"))]
    server, tool = text_of(args, "server"), text_of(args, "tool")
    if server:
        facts.append(Fact("Asked by", f"{tool} ({server})" if tool else server))
    url = _elicit_url(args)
    if url:
        facts.append(Fact("Link", url))
        facts.append(
            Fact(
                "",
                f"The link opens {_elicit_host(url)}, outside this chat: open it only if you "
                "trust it, and press Done once you have finished there.",
            )
        )
    return facts


def _elicit_form(args: Args) -> Form:
    schema = args.get("requested_schema")
    return form_from_schema(
        schema if isinstance(schema, Mapping) else {}, name="form", title="Your answer",
        submit="Send",
    )  # fmt: skip


def _elicit_controls(args: Args) -> list[Control]:
    if args.get("mode") == "url":
        return [Control(Verb.CONFIRM, "Done", Style.PRIMARY)] if _elicit_url(args) else []
    return [Control(Verb.SUBMIT, "Answer", Style.PRIMARY, _elicit_form(args))]


def _elicit_answer_facts(args: Args, answer: Any) -> list[Fact]:
    if args.get("mode") == "url":
        return [Fact("Decision", "Done")]
    return filled_facts(_elicit_form(args), args, answer)


ELICIT = Kind(
    title=lambda a: "Open a link" if a.get("mode") == "url" else "Input needed",
    facts=_elicit_facts,
    controls=_elicit_controls,
    answer=lambda verb, values, inputs, a: {} if verb is Verb.CONFIRM else dict(values),
    answer_facts=_elicit_answer_facts,
    gist=lambda a: text_of(a, "message"),
)


# -- an approval gate's request (bot/gates/gate.py, bot/gates/approvals.py) --------------------


def _gate_facts(args: Args) -> list[Fact]:
    request = approvals.read_request(args)
    facts = [Fact("Tool", request.tool), Fact("", request.description)]
    if not request.arguments:
        return [*facts, Fact("Arguments", "none")]
    return facts + [Fact(k, approvals.shown_value(v)) for k, v in request.arguments.items()]


def gate_edit_form(args: Args) -> Form:
    """The Edit form: the editable arguments, typed by the tool's schema, pre-filled with the
    call's values (an object or a list as JSON text)."""
    request = approvals.read_request(args)
    return form_from_schema(
        request.schema, name="edit", title="Edit the call", submit="Approve",
        values=request.arguments,
    )  # fmt: skip


def _gate_controls(args: Args) -> list[Control]:
    request = approvals.read_request(args)
    controls = [Control(Verb.APPROVE, "Approve", Style.PRIMARY)]
    if request.grant_seconds is not None:
        granted = approvals.duration(request.grant_seconds)
        label = f"Approve and allow {request.tool} here for {granted}"
        controls.append(Control(Verb.GRANT, label))
    elif request.grant_rule is not None:
        label = f"Approve and allow {request.grant_rule} for this session"
        controls.append(Control(Verb.GRANT, label))
    form = gate_edit_form(args)
    if form.fields:
        controls.append(Control(Verb.EDIT, "Edit", form=form))
    if request.stop:
        controls.append(STOP)  # beside the Decline every request has
    return controls


def _gate_answer(
    verb: Verb, values: Mapping[str, Any], inputs: Mapping[str, Any], a: Args
) -> Payload:
    if verb is Verb.EDIT:
        edited = approvals.typed_edit(approvals.read_request(a).schema, values)
        return approvals.Approval(arguments=edited).answer()
    return approvals.Approval(grant=verb is Verb.GRANT).answer()


def _gate_check(answer: Payload, args: Args) -> dict[str, str]:
    try:
        decision = approvals.read_decision(answer)
    except ValueError as err:
        return {"": str(err)}
    if decision.arguments is None:
        return {}
    return approvals.edit_errors(approvals.read_request(args).schema, decision.arguments)


def _gate_answer_facts(args: Args, answer: Any) -> list[Fact]:
    try:
        decision = approvals.read_decision(answer)
    except ValueError:
        return raw_facts(args, answer)
    request = approvals.read_request(args)
    if decision.grant and request.grant_seconds is not None:
        granted = approvals.duration(request.grant_seconds)
        return [Fact("Decision", f"Approved, and allowed here for {granted}")]
    if decision.grant and request.grant_rule is not None:
        return [Fact("Decision", f"Approved, and allowed {request.grant_rule} for this session")]
    facts = [Fact("Decision", "Approved")]
    if decision.arguments is not None:
        before = {k: v for k, v in request.arguments.items() if k in request.editable}
        changes = approvals.edit_changes(before, decision.arguments)
        facts.append(Fact("Edited", "\n".join(changes) or "no change"))
    return facts


GATE = Kind(
    title=lambda a: f"Run {approvals.read_request(a).tool or 'a tool'}?",
    facts=_gate_facts,
    controls=_gate_controls,
    answer=_gate_answer,
    answer_facts=_gate_answer_facts,
    gist=lambda a: approvals.read_request(a).description or approvals.read_request(a).tool,
    severity=lambda a: "warning",
    check=_gate_check,
)
