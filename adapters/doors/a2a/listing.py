"""ListTasks (A2A 1.0 §3.1.4) over the doors' task lists (bot/doors/task_lists.py): a token's
own tasks only, newest status first, filtered by context, state and status time, in pages of at
most 100 (50 unless asked) behind an opaque `nextPageToken` ("" on the last page)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from a2a.types import ListTasksRequest, ListTasksResponse, TaskState
from a2a.utils.constants import DEFAULT_LIST_TASKS_PAGE_SIZE
from a2a.utils.errors import InvalidParamsError
from a2a.utils.task import validate_history_length, validate_page_size

from adapters.doors.a2a.tasks import KEY_PREFIX, MAX_ID, STATES, context_of, task_of
from bot.doors.service import STATUS_OF, Doors, RequestBody
from bot.doors.task_lists import BadCursorError, Cursor, TaskQuery

# Each task state, the stored statuses it shows (states a request never has: none).
STATUSES = {
    state: tuple(STATUS_OF[shown] for shown, told in STATES.items() if told == state)
    for state in TaskState.values()
}


async def list_tasks(doors: Doors, requester: str, params: ListTasksRequest) -> ListTasksResponse:
    """The page of the requester's tasks `params` asks for (InvalidParamsError if it is not
    one this door can read)."""
    validate_history_length(params)  # no task here keeps a history: any length is all of it
    limit = params.page_size if params.HasField("page_size") else DEFAULT_LIST_TASKS_PAGE_SIZE
    validate_page_size(limit)
    query = _query(params, limit)
    if params.status != TaskState.TASK_STATE_UNSPECIFIED and not query.statuses:
        return ListTasksResponse(next_page_token="", page_size=limit, total_size=0)
    bodies, total = await doors.tasks(requester, query)
    page = bodies[:limit]
    token = _cursor(page[-1]) if len(bodies) > limit else ""  # the page's end, as read
    if params.context_id:  # the one request whose id it is, if it named another context
        page = [body for body in page if context_of(body) == params.context_id[:MAX_ID]]
    response = ListTasksResponse(page_size=limit, total_size=total, next_page_token=token)
    for body in page:
        task = task_of(body)
        if not params.include_artifacts:
            task.ClearField("artifacts")
        response.tasks.append(task)
    return response


def _query(params: ListTasksRequest, limit: int) -> TaskQuery:
    try:
        after = Cursor.read(params.page_token) if params.page_token else None
    except BadCursorError as err:
        raise InvalidParamsError(message=str(err)) from None
    since = None
    if params.HasField("status_timestamp_after"):
        since = params.status_timestamp_after.ToDatetime(tzinfo=UTC)
    statuses = STATUSES.get(params.status, ()) if params.status else ()
    context = params.context_id[:MAX_ID] or None
    return TaskQuery(
        statuses=statuses, since=since, after=after, limit=limit + 1,  # one more: is there more
        key_prefix=KEY_PREFIX + "[" if context else None,
        key_suffix=", " + json.dumps(context, ensure_ascii=False) + "]" if context else None,
        or_id=context,
    )  # fmt: skip


def _cursor(body: RequestBody) -> str:
    at = datetime.fromisoformat(str(body.get("answered_at") or body["created_at"]))
    return Cursor(at, str(body["id"])).token()
