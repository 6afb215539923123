"""Slack's assistant view: the app's own pane, a chat with the agent in threads of the app's DM.

A new thread (`assistant_thread_started`) is offered the agent file's suggested prompts
(`assistant.threads.setSuggestedPrompts`) and given its title (`setTitle`). A message in it is
a DM in a thread, and starts a turn as any DM does (adapters/surfaces/slack/conversations.py); its
status line is the turn's (adapters/surfaces/slack/status_line.py). When the person looks at another
channel meanwhile (`assistant_thread_context_changed`) nothing changes: the agent reads no
channel it was not asked about.

slack-bolt's AsyncAssistant middleware is not used: it keeps a thread's context in its own
store and answers messages itself, where these events need one call each and messages are the
conversations' like any other.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from adapters.surfaces.slack.calls import call_slack
from bot.config.agent_file import MAX_SUGGESTED_PROMPTS, SuggestedPrompt

log = logging.getLogger(__name__)

STARTED = "assistant_thread_started"
CONTEXT_CHANGED = "assistant_thread_context_changed"
TITLE = "New chat"  # a thread's title until the person renames it
PROMPTS_TITLE = "Try one of these:"


def prompts_of(prompts: Sequence[SuggestedPrompt]) -> list[dict[str, str]]:
    """The prompts as Slack takes them: at most four `{title, message}`."""
    return [{"title": p.title, "message": p.message} for p in prompts[:MAX_SUGGESTED_PROMPTS]]


def thread_of(event: Mapping[str, Any]) -> tuple[str, str] | None:
    """(channel, thread_ts) of an assistant thread event, None if it names none."""
    thread = event.get("assistant_thread")
    if not isinstance(thread, Mapping):
        return None
    channel, thread_ts = thread.get("channel_id"), thread.get("thread_ts")
    if not isinstance(channel, str) or not isinstance(thread_ts, str) or not channel:
        return None
    return (channel, thread_ts) if thread_ts else None


class AssistantThreads:
    """Answers the assistant view's thread events (called after the ack)."""

    def __init__(self, client: AsyncWebClient, prompts: Sequence[SuggestedPrompt]) -> None:
        self.client = client
        self.prompts = prompts_of(prompts)

    async def on_started(self, event: Mapping[str, Any]) -> None:
        found = thread_of(event)
        if found is None:
            return
        channel, thread_ts = found
        if self.prompts:
            await call_slack(
                lambda: self.client.assistant_threads_setSuggestedPrompts(
                    channel_id=channel, thread_ts=thread_ts, prompts=self.prompts,
                    title=PROMPTS_TITLE,
                ),
                "assistant.threads.setSuggestedPrompts",
            )  # fmt: skip
        await call_slack(
            lambda: self.client.assistant_threads_setTitle(
                channel_id=channel, thread_ts=thread_ts, title=TITLE
            ),
            "assistant.threads.setTitle",
        )

    async def on_context_changed(self, event: Mapping[str, Any]) -> None:
        log.debug("Slack: an assistant thread's context changed: %s", thread_of(event))
