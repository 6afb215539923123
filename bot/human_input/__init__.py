"""The human-input primitive: a tool call that pauses until a person answers.

Every request settles exactly once: resolve, reject, timeout, release, close and a cancelled
wait race for one claim (settler.py: at most four steps). With a store attached, the database
is the source of truth and, across workers, the worker holding a request decides its settle
(holding.py). Observers (the chat surfaces) hear every transition. handler.py lists the parts.
"""

from bot.human_input.creator import DENIED_BY_HOOK, NOTIFIER_BUDGET_SECONDS
from bot.human_input.handler import DEFAULT_TIMEOUT_SECONDS, HumanInputHandler
from bot.human_input.holding import HOLD_SECONDS
from bot.human_input.ports import HandlerStore, HoldRows, RequestRows
from bot.human_input.rules import RequestRules
from bot.human_input.snapshots import (
    AnswerValidator,
    Notifier,
    Observer,
    PendingInputEvent,
    RenderState,
    RequestUpdate,
    snapshot,
    timeout_message,
    undeliverable_message,
)
from bot.records import PendingInput, RequestStatus

PendingInputStatus = RequestStatus

__all__ = [
    "DEFAULT_TIMEOUT_SECONDS",
    "DENIED_BY_HOOK",
    "HOLD_SECONDS",
    "NOTIFIER_BUDGET_SECONDS",
    "AnswerValidator",
    "HandlerStore",
    "HoldRows",
    "HumanInputHandler",
    "Notifier",
    "Observer",
    "PendingInput",
    "PendingInputEvent",
    "PendingInputStatus",
    "RenderState",
    "RequestRows",
    "RequestRules",
    "RequestUpdate",
    "snapshot",
    "timeout_message",
    "undeliverable_message",
]
