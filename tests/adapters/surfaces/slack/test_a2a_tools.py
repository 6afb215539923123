"""A remote A2A agent as a tool, end to end through Slack: the served bridge with an agent file
naming the agent; the model calls its `deploy` skill, the agent needs input, the question is
posted in the thread, the person's reply there goes back on the agent's task, and its result
reaches the model."""

from __future__ import annotations

import json
from pathlib import Path

from tests.adapters.surfaces.slack.conftest import StartEnv
from tests.bot.tool_sources.a2a_agent import TOKEN, a2a_agent
from tests.fakes.anthropic_api import reply_text, reply_tool_use

AGENT_FILE = """\
system_prompt: You run deploys through the deployer agent.
tools:
  - a2a: {{url: '{url}', headers: {{Authorization: 'Bearer {token}'}}}}
"""


async def test_the_remote_agent_s_question_is_asked_in_the_thread_and_answered_there(
    start_env: StartEnv, tmp_path: Path
) -> None:

    async with a2a_agent() as (url, heard):
        path = tmp_path / "agent.yaml"
        path.write_text(AGENT_FILE.format(url=url, token=TOKEN))
        env = await start_env(HITL_AGENT_FILE=str(path))
        env.model.script(
            reply_tool_use("deployer_deploy", {"message": "deploy api"}), reply_text("Done.")
        )
        thread = await env.mention("deploy the api please")
        question = await thread.request()
        assert "Which region should api go to?" in json.dumps(question)
        await env.reply_in_thread(thread, "eu-west")
        assert (await thread.reply())["text"] == "Done."
    result = env.tool_result(2)
    assert "is_error" not in result
    assert result["content"] == "deployed api to eu-west"
    assert heard.messages[-1].parts[0].text == "eu-west"
    audit = await env.store.list_audit(limit=50)
    assert {"request.created", "request.resolved"} <= {e.action for e in audit}
