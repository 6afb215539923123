"""The Python client of the bridge's HTTP API (docs/api-and-mcp.md): ask people from any program.

    from hitl_client import HitlClient, RequestDeclined

    async with HitlClient("https://hitl.example.com", "hitl_...") as hitl:
        region = await hitl.ask("Which region?", "slack:U0123ABCD")

It speaks HTTP only (httpx2); nothing here imports the server side.
"""

from bot.human_tools.models import (
    DataField,
    RequestApprovalAnswer,
    SelectOptionAnswer,
    UploadFileAnswer,
)
from hitl_client.client import MAX_WAIT, HitlClient
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
from hitl_client.request_info import RequestInfo, RequestPage, Status

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
