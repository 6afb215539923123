"""The Python client of the bridge's HTTP API (docs/api-and-mcp.md): ask people from any program.

    from bot.client import HitlClient, RequestDeclined

    async with HitlClient("https://hitl.example.com", "hitl_...") as hitl:
        region = await hitl.ask("Which region?", "slack:U0123ABCD")

It speaks HTTP only (httpx2); nothing here imports the server side.
"""

from bot.client.errors import (
    HitlApiError,
    HitlConnectionError,
    HitlError,
    RequestCancelled,
    RequestDeclined,
    RequestExpired,
    RequestNotAnswered,
    RequestUndeliverable,
)
from bot.client.hitl_client import MAX_WAIT, HitlClient
from bot.client.request_info import RequestInfo, RequestPage, Status
from bot.human_tools.models import (
    DataField,
    RequestApprovalAnswer,
    SelectOptionAnswer,
    UploadFileAnswer,
)

__all__ = [
    "MAX_WAIT",
    "DataField",
    "HitlApiError",
    "HitlClient",
    "HitlConnectionError",
    "HitlError",
    "RequestApprovalAnswer",
    "RequestCancelled",
    "RequestDeclined",
    "RequestExpired",
    "RequestInfo",
    "RequestNotAnswered",
    "RequestPage",
    "RequestUndeliverable",
    "SelectOptionAnswer",
    "Status",
    "UploadFileAnswer",
]
