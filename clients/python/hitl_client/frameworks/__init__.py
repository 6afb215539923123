"""The bridge inside agent frameworks: each module turns a framework's own human-in-the-loop
pause into requests to the bridge, and the person's decisions back into the framework's terms.

- `hitl_client.frameworks.langchain`: LangGraph interrupts, LangChain's
  `HumanInTheLoopMiddleware` (batched and per call) and Agent Inbox's `HumanInterrupt`
  (extra `langgraph` or `langchain`).
- `hitl_client.frameworks.openai_agents`: the OpenAI Agents SDK's tool approvals
  (extra `openai-agents`).
- `hitl_client.frameworks.claude_agent_sdk`: the Claude Agent SDK's `can_use_tool`
  (extra `claude-agent-sdk`).

Nothing here is imported by `import hitl_client`, nor by importing this package: a module
imports its framework when it is imported itself, so the client installs and imports without
any of them.
"""
