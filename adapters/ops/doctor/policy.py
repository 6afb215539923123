"""The policy file: it loads, and each group it names (Slack user groups, Entra groups) can be
read by the surface whose group it is."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping

from adapters.ops.doctor.results import Result, failed, passed, skipped
from adapters.serve.settings import Settings
from bot import ConfigurationError
from bot.policies.directory import GroupSource, GroupUnreadable
from bot.policies.rules import Policy

POLICY = "policy file"
GROUPS = "policy groups"
FILE_FIX = "correct the policy file where the line says (docs/policies.md)"
SURFACE_OF = {"slack:": "Slack (SLACK_BOT_TOKEN)", "entra:": "Teams (TEAMS_CLIENT_ID and _SECRET)"}
GROUP_FIXES = {
    "slack:": "give the Slack app the usergroups:read scope (manifest.yml) and reinstall it, "
    "or correct the group's id (slack:S…)",
    "entra:": "grant the app registration GroupMember.Read.All (application, admin-consented), "
    "or correct the group's id (entra:<group id>)",
}


async def policy_file(settings: Settings, sources: Mapping[str, GroupSource]) -> list[Result]:
    """`sources`: the group readers of the surfaces configured, by prefix (`slack:`, `entra:`)."""
    path = settings.policy_file
    if path is None:
        return [skipped(POLICY, "HITL_POLICY_FILE is unset: the actor, HITL_APPROVERS and "
                        "HITL_ADMINS may answer")]  # fmt: skip
    try:
        policy = Policy.load(path, settings.approvers, settings.admins)
    except ConfigurationError as err:
        return [failed(POLICY, str(err), FILE_FIX)]
    loaded = passed(POLICY, f"{path} loads: {len(policy.rules)} rule(s)")
    groups = sorted(set(groups_of(policy)))
    if not groups:
        return [loaded, skipped(GROUPS, "the policy names no group")]
    read = await asyncio.gather(*(_members(group, sources) for group in groups))
    unreadable = [found for found in read if isinstance(found, tuple)]
    if unreadable:
        whys = "; ".join(why for why, _ in unreadable)
        return [loaded, failed(GROUPS, whys, "; ".join(sorted({fix for _, fix in unreadable})))]
    counted = ", ".join(f"{g} ({n} members)" for g, n in zip(groups, read, strict=True))
    return [loaded, passed(GROUPS, f"read: {counted}")]


def groups_of(policy: Policy) -> Iterator[str]:
    """The groups the policy names: as approvers, as escalations' approvers, as drivers."""
    for rule in policy.rules:
        principals = [*rule.approvers, *(p for step in rule.escalate for p in step.approvers)]
        yield from (str(p) for p in principals if p.is_group)
    for drivers in policy.drivers:
        yield from (str(p) for p in drivers.users if p.is_group)


async def _members(group: str, sources: Mapping[str, GroupSource]) -> int | tuple[str, str]:
    """How many members `group` has, or why it cannot be read and the fix."""
    prefix = _prefix(group)
    source = sources.get(prefix)
    surface = SURFACE_OF.get(prefix, prefix)
    if source is None:
        return f"{group} is read through {surface}, not configured", f"configure {surface}"
    try:
        return len(await source.members(group))
    except GroupUnreadable as err:
        return str(err), GROUP_FIXES.get(prefix, "correct the group's id")


def _prefix(group: str) -> str:
    return group.partition(":")[0] + ":"
