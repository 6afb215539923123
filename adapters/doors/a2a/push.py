"""A2A push notifications: a task's push configs kept in the store (bot/store/push_configs.py)
and, once the task settles, its task POSTed to each config's URL by the webhook machinery
(adapters/doors/api/webhooks.py, handed in by adapters/serve/door_service.py as
`PushPorts.enqueue`): signed as a
webhook is, retried with backoff, checked for SSRF at create time and again at delivery, the
config's token sent as `X-A2A-Notification-Token` and its `authentication` (Bearer or Basic,
A2A 1.0 §13.2) as `Authorization`. The body is what the SDK sends: a
`StreamResponse` holding the task, as JSON.

A request settles once (working, then completed, rejected, canceled or failed), so each config
gets one notification. A config made after its task settled is notified at once; one made while
it settles is notified once too (the settle's hook, or the config's creation, enqueues it: a
delivery is unique per request and config).

The token and credentials are the caller's; they are stored (they must be sent) but never
logged or audited.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
from datetime import UTC, datetime

from a2a.types import StreamResponse, TaskPushNotificationConfig
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError
from google.protobuf.json_format import MessageToDict

from adapters.doors.a2a.loading import PushPorts
from adapters.doors.a2a.tasks import task_of
from bot.doors.service import RequestBody
from bot.store.push_configs import PushConfig

MAX_CONFIGS = 10  # configs a task may have: one a listener, a few listeners
MAX_URL = 2048
MAX_TOKEN = 1024
MAX_ID = 64
SCHEMES = {"bearer": "Bearer", "basic": "Basic"}  # AuthenticationInfo's schemes the door sends
TOKEN68 = re.compile(r"[A-Za-z0-9\-._~+/]+=*")  # RFC 9110's token68: one header-safe word


def notification(body: RequestBody) -> str:
    """The body POSTed: the task in a StreamResponse, as the SDK's own sender serializes it."""
    response = StreamResponse()
    response.task.CopyFrom(task_of(body))
    return json.dumps(MessageToDict(response), separators=(",", ":"), ensure_ascii=False)


def config_message(config: PushConfig) -> TaskPushNotificationConfig:
    """The config as its caller gave it (its credentials too: the config is theirs alone)."""
    message = TaskPushNotificationConfig(
        id=config.id, task_id=config.request_id, url=config.url, token=config.token or ""
    )
    if config.auth_scheme is not None:
        message.authentication.scheme = config.auth_scheme
        message.authentication.credentials = config.auth_credentials or ""
    return message


def _authentication(params: TaskPushNotificationConfig) -> tuple[str | None, str | None]:
    """The config's scheme (Bearer or Basic, as RFC 9110 names them) and credentials, checked
    to fit in one header line; InvalidParamsError saying what is wrong. Basic credentials given
    as "user:password" are sent base64-encoded, as RFC 7617 has them."""
    if not params.HasField("authentication"):
        return None, None
    scheme = SCHEMES.get(params.authentication.scheme.strip().lower())
    if scheme is None:
        raise InvalidParamsError(message=f"push notification authentication scheme "
                                 f"'{params.authentication.scheme[:20]}' is not offered: "
                                 f"use {' or '.join(SCHEMES.values())}")  # fmt: skip
    credentials = params.authentication.credentials.strip()
    if scheme == "Basic" and ":" in credentials and not TOKEN68.fullmatch(credentials):
        credentials = base64.b64encode(credentials.encode()).decode()
    if not TOKEN68.fullmatch(credentials) or len(credentials) > MAX_TOKEN:
        raise InvalidParamsError(message=f"push notification {scheme} credentials must be one "
                                 f"token (letters, digits, -._~+/ then =), at most {MAX_TOKEN} "
                                 "characters")  # fmt: skip
    return scheme, credentials


class Pushes:
    """A token's push configs of its tasks (the handler has checked the task is the token's)."""

    def __init__(self, ports: PushPorts) -> None:
        self.ports = ports

    async def read(self, params: TaskPushNotificationConfig, requester: str) -> PushConfig:
        """The config asked for, checked (its URL against the SSRF rules): InvalidParamsError
        saying what is wrong. Its task id is the message's (SendMessage's is set later)."""
        url = params.url.strip()
        if not url:
            raise InvalidParamsError(message="the push notification config needs a url")
        if len(url) > MAX_URL or len(params.token) > MAX_TOKEN or len(params.id) > MAX_ID:
            raise InvalidParamsError(message=f"the push notification config's url is over "
                                     f"{MAX_URL} characters, its token over {MAX_TOKEN} or "
                                     f"its id over {MAX_ID}")  # fmt: skip
        scheme, credentials = _authentication(params)
        refused = await self.ports.check_url(url)
        if refused is not None:
            raise InvalidParamsError(message=f"push notification url refused: {refused}")
        return PushConfig(
            request_id=params.task_id, id=params.id or secrets.token_hex(8), requester=requester,
            url=url, token=params.token or None, created_at=datetime.now(UTC),
            auth_scheme=scheme, auth_credentials=credentials,
        )  # fmt: skip

    async def keep(self, config: PushConfig) -> None:
        """Store `config` (InvalidParamsError if its task has its fill of configs)."""
        if not await self.ports.tables.put(config, MAX_CONFIGS):
            raise InvalidParamsError(
                message=f"task {config.request_id} has {MAX_CONFIGS} push notification configs "
                "already: delete one first"
            )

    async def notify(self, body: RequestBody, configs: list[PushConfig]) -> None:
        """Enqueue the settled task's notification to each config."""
        raw = notification(body)
        for config in configs:
            await self.ports.enqueue(config, raw)

    async def get(self, task_id: str, config_id: str) -> PushConfig:
        config = await self.ports.tables.get(task_id, config_id)
        if config is None:
            raise TaskNotFoundError(
                message=f"task {task_id[:64]} has no push notification config {config_id[:64]}"
            )
        return config

    async def all(self, task_id: str) -> list[PushConfig]:
        return await self.ports.tables.of_request(task_id)

    async def delete(self, task_id: str, config_id: str) -> None:
        """Delete the config; one that is not there is gone already (as the SDK's handler)."""
        await self.ports.tables.remove(task_id, config_id)
