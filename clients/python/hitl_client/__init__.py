"""hitl-client: the Python client of hitl-bridge's HTTP API. Ask people from any program.

    from hitl_client import HitlClient, RequestDeclined

    async with HitlClient("https://hitl.example.com", "hitl_...") as hitl:
        region = await hitl.ask("Which region?", "slack:U0123ABCD")

`SyncHitlClient` is the same, blocking; `verify_webhook` checks a delivery the bridge signed.
It speaks HTTP only (httpx and pydantic): it needs nothing of the server. Its names are
imported when first used (`__getattr__` below), so `import hitl_client` costs next to nothing
and a program pays for pydantic's models only once it touches the client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the names as the type checker sees them; at run time, __getattr__
    from hitl_client.calls import MAX_WAIT
    from hitl_client.client import HitlClient
    from hitl_client.errors import (
        HitlApiError,
        HitlConnectionError,
        HitlError,
        RequestCancelled,
        RequestDeclined,
        RequestExpired,
        RequestNotAnswered,
        RequestUndeliverable,
    )
    from hitl_client.models import (
        ApproveToolCallArguments,
        AskUserQuestionAnswer,
        AskUserQuestionArguments,
        CollectUserDataArguments,
        ConfirmActionAnswer,
        ConfirmActionArguments,
        DataField,
        RequestApprovalAnswer,
        RequestApprovalArguments,
        SelectOptionAnswer,
        SelectOptionArguments,
        ToolCallReview,
        UploadFileAnswer,
        UploadFileArguments,
    )
    from hitl_client.request_info import RequestInfo, RequestPage, Status
    from hitl_client.sync_client import SyncHitlClient
    from hitl_client.webhooks import WebhookSignatureError, verify_webhook

# Where each public name is defined: imported on first use (`from hitl_client import X` too).
_WHERE = {
    "MAX_WAIT": "calls",
    "HitlClient": "client",
    "HitlApiError": "errors",
    "HitlConnectionError": "errors",
    "HitlError": "errors",
    "RequestCancelled": "errors",
    "RequestDeclined": "errors",
    "RequestExpired": "errors",
    "RequestNotAnswered": "errors",
    "RequestUndeliverable": "errors",
    "ApproveToolCallArguments": "models",
    "AskUserQuestionAnswer": "models",
    "AskUserQuestionArguments": "models",
    "CollectUserDataArguments": "models",
    "ConfirmActionAnswer": "models",
    "ConfirmActionArguments": "models",
    "DataField": "models",
    "RequestApprovalAnswer": "models",
    "RequestApprovalArguments": "models",
    "SelectOptionAnswer": "models",
    "SelectOptionArguments": "models",
    "ToolCallReview": "models",
    "UploadFileAnswer": "models",
    "UploadFileArguments": "models",
    "RequestInfo": "request_info",
    "RequestPage": "request_info",
    "Status": "request_info",
    "SyncHitlClient": "sync_client",
    "WebhookSignatureError": "webhooks",
    "verify_webhook": "webhooks",
}


def __getattr__(name: str) -> object:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'hitl_client' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"hitl_client.{module}"), name)
    globals()[name] = value  # the next use is a plain lookup
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])


__all__ = [
    "MAX_WAIT",
    "ApproveToolCallArguments",
    "AskUserQuestionAnswer",
    "AskUserQuestionArguments",
    "CollectUserDataArguments",
    "ConfirmActionAnswer",
    "ConfirmActionArguments",
    "DataField",
    "HitlApiError",
    "HitlClient",
    "HitlConnectionError",
    "HitlError",
    "RequestApprovalAnswer",
    "RequestApprovalArguments",
    "RequestCancelled",
    "RequestDeclined",
    "RequestExpired",
    "RequestInfo",
    "RequestNotAnswered",
    "RequestPage",
    "RequestUndeliverable",
    "SelectOptionAnswer",
    "SelectOptionArguments",
    "Status",
    "SyncHitlClient",
    "ToolCallReview",
    "UploadFileAnswer",
    "UploadFileArguments",
    "WebhookSignatureError",
    "verify_webhook",
]
