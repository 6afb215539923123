"""The names of the tools that ask a person, as the model, the agent file and the API know
them: the built-in human tools, in the order they are offered, and the two kinds a tool asks
rather than the model (an approval gate, an MCP server's elicitation)."""

from __future__ import annotations

ASK_USER_QUESTION = "AskUserQuestion"
REQUEST_APPROVAL = "requestApproval"
SELECT_OPTION = "selectOption"
COLLECT_USER_DATA = "collectUserData"
UPLOAD_FILE = "uploadFile"
CONFIRM_ACTION = "confirmAction"

BUILTIN_TOOL_NAMES = (
    ASK_USER_QUESTION,
    REQUEST_APPROVAL,
    SELECT_OPTION,
    COLLECT_USER_DATA,
    UPLOAD_FILE,
    CONFIRM_ACTION,
)

GATE_TOOL = "approveToolCall"  # asked by an approval gate in front of a tool call
ELICIT_INPUT = "elicitInput"  # asked by an MCP server during a tool call
