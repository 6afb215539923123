"""A policy's `drivers` end to end in Slack: in the rooms it names, only its users and the
members of its groups (usergroups.users.list) start or continue the agent's turns; anyone else
is told privately (chat.postEphemeral) and the refusal is audited (`turn_refused`); a group
that cannot be read lets nobody in through it, and says so; other rooms stay anyone's."""

from __future__ import annotations

from pathlib import Path

from tests.adapters.surfaces.slack.conftest import (
    ADMIN,
    ALICE,
    CHANNEL,
    STRANGER,
    WAIT,
    Env,
    StartEnv,
)
from tests.fakes.anthropic_api import reply_text
from tests.fakes.slack_signing import event_callback, message_event

CAROL = "U0CAROL001"
OPS = "S0OPSTEAM"  # Carol's group
GONE = "S0NOSUCH1"  # a group Slack does not know
ELSEWHERE = "C0ELSEWHERE"
POLICY = f"""\
rules:
  - match: {{tool: "*"}}
    approvers: [actor]
drivers:
  - room: "slack:{CHANNEL}:*"
    users: [slack:{ALICE}, slack:{OPS}]
  - room: "slack:C0ELSE*"
    users: [slack:{GONE}]
"""
REFUSED = ("Only some people may ask the agent to work in this conversation, and you are not "
           "among them: ask one of them, or an admin.")  # fmt: skip


async def served(start_env: StartEnv, tmp_path: Path) -> Env:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    env = await start_env(HITL_POLICY_FILE=str(policy), HITL_ADMINS=ADMIN)
    env.slack.add_user(CAROL, "carol")
    env.slack.add_usergroup(OPS, [CAROL])
    return env


async def refusals(env: Env, count: int) -> list[dict[str, object]]:
    """The `turn_refused` audit lines, once there are `count` (then the ephemerals too)."""
    await env.slack.wait_for(lambda: len(env.slack.ephemerals) >= count, WAIT)
    entries = await env.store.list_audit()
    return [e.detail | {"actor": e.actor_id} for e in entries if e.action == "turn_refused"]


async def test_a_non_driver_is_refused_privately_and_audited(
    start_env: StartEnv, tmp_path: Path
) -> None:
    env = await served(start_env, tmp_path)
    thread = await env.mention("deploy everything", user=STRANGER)

    (told,) = await env.slack.wait_for(lambda: env.slack.ephemerals, WAIT)
    assert told["user"] == STRANGER and told["channel"] == CHANNEL
    assert told["thread_ts"] == thread.ts
    assert told["text"] == REFUSED
    (refusal,) = await refusals(env, 1)
    assert refusal["actor"] == STRANGER and refusal["surface"] == "slack"
    assert refusal["room"] == f"slack:{CHANNEL}:{thread.ts}"
    assert env.model.requests == [] and thread.bot_messages() == []  # no turn, no reply


async def test_a_named_driver_and_a_group_member_run_turns(
    start_env: StartEnv, tmp_path: Path
) -> None:
    env = await served(start_env, tmp_path)
    env.model.script(reply_text("Hello Alice."), reply_text("Hello Carol."))
    alice = await env.mention("hello", user=ALICE)
    assert (await alice.reply())["text"] == "Hello Alice."
    carol = await env.mention("hello", user=CAROL)  # in the ops group
    assert (await carol.reply())["text"] == "Hello Carol."
    assert len(env.model.requests) == 2
    assert env.slack.ephemerals == []
    assert "turn_refused" not in [e.action for e in await env.store.list_audit()]

    # A reply in Carol's thread by someone else continues nothing.
    await env.reply_in_thread(carol, "and me?", user=STRANGER)
    await refusals(env, 1)
    assert len(env.model.requests) == 2


async def test_a_group_that_cannot_be_read_lets_nobody_in_but_admins(
    start_env: StartEnv, tmp_path: Path
) -> None:
    env = await served(start_env, tmp_path)
    env.slack.channels.add(ELSEWHERE)
    mention = f"<@{env.slack.bot_user_id}> hello"
    env.model.script(reply_text("Hello admin."))
    for user in (CAROL, ADMIN):
        root = env.slack.add_message(ELSEWHERE, mention, user=user)
        await post_mention(env, ELSEWHERE, root["ts"], mention, user)
    (told,) = await env.slack.wait_for(lambda: env.slack.ephemerals, WAIT)
    assert told["user"] == CAROL and told["channel"] == ELSEWHERE
    assert told["text"] == (
        f"The members of slack:{GONE} cannot be read: Slack usergroups.users.list failed: "
        "no_such_subteam: nobody can drive the agent here through it until it can be read."
    )
    await env.slack.wait_for(lambda: env.model.requests, WAIT)
    assert len(env.model.requests) == 1  # the admin's


async def post_mention(env: Env, channel: str, ts: str, text: str, user: str) -> None:
    event = message_event(text, user=user, channel=channel, ts=ts, event_type="app_mention")
    response = await env.post(event_callback(event))
    assert response.status == 200, await response.text()
