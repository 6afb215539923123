"""hitl-client: the Python client of hitl-bridge's HTTP API. Ask people from any program.

    from hitl_client import HitlClient, RequestDeclined

    async with HitlClient("https://hitl.example.com", "hitl_...") as hitl:
        region = await hitl.ask("Which region?", "slack:U0123ABCD")

`SyncHitlClient` is the same, blocking; `verify_webhook` checks a delivery the bridge signed.
It speaks HTTP only (httpx and pydantic): it needs nothing of the server.
"""

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
