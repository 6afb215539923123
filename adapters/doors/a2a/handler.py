"""The A2A methods over the doors (bot/doors/service.py): the SDK's `RequestHandler`, with
every task read from the store and none kept in memory, so any worker answers for any task.

The SDK's own `DefaultRequestHandler` runs an `AgentExecutor` per task in the worker that took
the message and streams from that worker's memory; a person's answer may take an hour and
reach another worker, or one started since. Here each method asks the doors instead:
SendMessage asks (or finds the request its message asked already) and, unless
`returnImmediately`, waits in long polls until the person settles it; the streams send the
task, then its answer and final status once it settles; CancelTask withdraws the request.
Each caller sees its own token's tasks only, and their push notification configs
(adapters/doors/a2a/push.py), set by the push config methods or SendMessage's configuration.
ListTasks lists the token's tasks from the store (adapters/doors/a2a/listing.py).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import replace
from typing import TypeVar

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.request_handler import RequestHandler, validate_request_params
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
)
from a2a.utils.errors import (
    ExtendedAgentCardNotConfiguredError,
    InternalError,
    InvalidParamsError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

from adapters.doors.a2a.listing import list_tasks
from adapters.doors.a2a.push import Pushes, config_message
from adapters.doors.a2a.tasks import Event, ask_of, context_of, final_events, task_of
from bot.doors.long_polls import TooManyPolls
from bot.doors.service import MAX_WAIT, DoorError, Doors, RequestBody
from bot.records import StoreUnavailableError
from bot.store.push_configs import PushConfig

log = logging.getLogger(__name__)

REQUESTER = "hitl.requester"  # the state's entry naming who asks (the token's name)
GONE = "hitl.gone"  # the state's entry telling whether the caller closed its connection
Gone = Callable[[], bool]
UNAVAILABLE = "the bridge cannot reach its database now: try again shortly"
T = TypeVar("T")


class PersonHandler(RequestHandler):
    """The A2A methods of one bridge (see the module's docstring)."""

    def __init__(self, doors: Doors, pushes: Pushes, default_to: str | None = None) -> None:
        self.doors = doors
        self.pushes = pushes
        self.default_to = default_to  # who a message naming nobody asks (HITL_A2A_DEFAULT_TO)

    # -- the task methods -------------------------------------------------------------------

    @validate_request_params
    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Task | Message:
        body = await self._ask(params, context)
        if not params.configuration.return_immediately:
            body = await self._settled(body, context)
        return task_of(body)

    @validate_request_params
    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        body = await self._ask(params, context)
        async for event in self._follow(body, context):
            yield event

    @validate_request_params
    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task:
        return task_of(await self._get(params.id, context))

    @validate_request_params
    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task:
        body = await self._get(params.id, context)
        if body["status"] != "pending":
            raise TaskNotCancelableError(message=f"task {params.id[:64]} ended already: "
                                         f"{body['status']}")  # fmt: skip
        return task_of(await _door(self.doors.cancel(_requester(context), params.id)))

    @validate_request_params
    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        body = await self._get(params.id, context)
        if body["status"] != "pending":  # as the SDK's handler: nothing more to stream
            raise UnsupportedOperationError(
                message=f"task {params.id[:64]} ended already ({body['status']}): GetTask reads it"
            )
        async for event in self._follow(body, context):
            yield event

    @validate_request_params
    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        return await _door(list_tasks(self.doors, _requester(context), params))

    # -- what is not offered ----------------------------------------------------------------

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        raise ExtendedAgentCardNotConfiguredError

    # -- push notifications -----------------------------------------------------------------

    @validate_request_params
    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        await self._get(params.task_id, context)  # the token's task, or TaskNotFound
        config = await self.pushes.read(params, _requester(context))
        await self._keep(config, context)
        return config_message(config)

    @validate_request_params
    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        await self._get(params.task_id, context)
        return config_message(await self.pushes.get(params.task_id, params.id))

    @validate_request_params
    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        await self._get(params.task_id, context)  # a few a task (MAX_CONFIGS): one page
        configs = await self.pushes.all(params.task_id)
        return ListTaskPushNotificationConfigsResponse(configs=map(config_message, configs))

    @validate_request_params
    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        await self._get(params.task_id, context)
        await self.pushes.delete(params.task_id, params.id)

    # -- steps ------------------------------------------------------------------------------

    async def _ask(self, params: SendMessageRequest, context: ServerCallContext) -> RequestBody:
        message = params.message
        if message.task_id:
            await self._named(message, context)
        asked = ask_of(message, self.default_to)
        push = None
        if params.configuration.HasField("task_push_notification_config"):  # checked first:
            config = params.configuration.task_push_notification_config  # no task if refused
            push = await self.pushes.read(config, _requester(context))
        body, _ = await _door(self.doors.ask(_requester(context), asked))
        if push is not None:
            await self._keep(replace(push, request_id=body["id"]), context)
        return body

    async def _named(self, message: Message, context: ServerCallContext) -> None:
        """Refuse a message naming a task: TaskNotFoundError if it is not the token's (none,
        or another's: both look the same), else as a task takes no second message."""
        body = await self._get(message.task_id, context)
        if message.context_id and message.context_id != context_of(body):
            raise InvalidParamsError(message=f"the message's contextId is not task "
                                     f"{body['id']}'s context")  # fmt: skip
        raise UnsupportedOperationError(
            message=f"task {body['id']} takes no second message ({body['status']}): it ends "
            "with the person's answer (send a new message, without taskId, to ask again)"
        )

    async def _keep(self, config: PushConfig, context: ServerCallContext) -> None:
        """Store the config; if its task has settled (read after: a settle meanwhile is seen
        here or by the settle's hook, and the delivery is one either way), notify it now."""
        await self.pushes.keep(config)
        body = await self._get(config.request_id, context)
        if body["status"] != "pending":
            await self.pushes.notify(body, [config])

    async def _get(self, task_id: str, context: ServerCallContext) -> RequestBody:
        return await _door(self.doors.get(_requester(context), task_id))

    async def _follow(self, body: RequestBody, context: ServerCallContext) -> AsyncGenerator[Event]:
        """The task as it is, then (once it settles) its answer and final status."""
        yield task_of(body)
        settled = await self._settled(body, context)
        if settled["status"] != "pending":
            for event in final_events(settled):
                yield event

    async def _settled(self, body: RequestBody, context: ServerCallContext) -> RequestBody:
        """`body` once settled, waited on in long polls (each at most a minute: the request's
        own expiry ends the wait); as it is when the caller is gone or over its polls."""
        gone: Gone | None = context.state.get(GONE)
        requester = _requester(context)
        with contextlib.suppress(TooManyPolls):
            while body["status"] == "pending" and not (gone is not None and gone()):
                body = await _door(self.doors.get(requester, body["id"], MAX_WAIT, gone))
        return body


async def _door(call: Awaitable[T]) -> T:
    """`call`'s result; a door's refusal as the A2A error that says it (a store outage too:
    the client may retry)."""
    try:
        return await call
    except DoorError as err:
        if err.status == 404:
            raise TaskNotFoundError(message=str(err)) from None
        raise InvalidParamsError(message=str(err), data=err.errors or None) from None
    except StoreUnavailableError as err:
        log.warning("A2A: the store is unavailable: %s", err)
        raise InternalError(message=UNAVAILABLE) from None


def _requester(context: ServerCallContext) -> str:
    requester = context.state.get(REQUESTER)
    if not isinstance(requester, str):  # only a request that came past the door's check
        raise InvalidParamsError(message="the request was not authenticated")
    return requester
