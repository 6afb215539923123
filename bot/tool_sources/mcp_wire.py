"""The plumbing of an MCP connection: its transport watched for its end, a stdio server's
stderr kept, its errors and results read as one line or as text."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import threading
from collections import deque
from collections.abc import AsyncIterator
from typing import Any, TextIO

import anyio
import mcp_types as types
from mcp.client import Transport
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

log = logging.getLogger(__name__)


def connection_lost(err: MCPError) -> bool:
    """Whether an error means the connection is gone (not that the call was refused)."""
    if err.code == types.CONNECTION_CLOSED:
        return True
    return err.code in (types.INTERNAL_ERROR, types.INVALID_REQUEST) and err.message in (
        "Server returned an error response",
        "Session terminated",
    )


def text_of_result(result: types.CallToolResult) -> str:
    """A tool result as the model reads it: its text, other content named."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.ImageContent | types.AudioContent):
            parts.append(f"[{block.type}: {block.mime_type}]")
        elif isinstance(block, types.ResourceLink):
            parts.append(f"[resource: {block.uri}]")
        elif isinstance(block, types.EmbeddedResource):
            resource = block.resource
            text = getattr(resource, "text", None)
            parts.append(text if isinstance(text, str) else f"[resource: {resource.uri}]")
    text = "\n".join(parts)
    if not text and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False)
    return text


def reason(err: BaseException) -> str:
    """One line for an error, through the task groups' exception groups."""
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    if isinstance(err, MCPError):
        return err.message
    if isinstance(err, OSError) and err.strerror:
        return f"{err.strerror}: {err.filename}" if err.filename else err.strerror
    lines = str(err).strip().splitlines()
    return f"{type(err).__name__}: {lines[0]}" if lines else type(err).__name__


@contextlib.asynccontextmanager
async def watched(transport: Transport, lost: asyncio.Event) -> AsyncIterator[Any]:
    """The transport's streams, with its read stream's end setting `lost`."""
    async with transport as (read, write):
        send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def pump() -> None:
            try:
                async with send:
                    async for item in read:
                        await send.send(item)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
                pass
            finally:
                lost.set()

        async with anyio.create_task_group() as group:
            group.start_soon(pump)
            try:
                yield receive, write
            finally:
                group.cancel_scope.cancel()
                receive.close()


class StderrTail:
    """A stdio server's stderr: logged at INFO, its last lines kept for messages about it."""

    def __init__(self, label: str, lines: deque[str]) -> None:
        self.label = label
        self.lines = lines
        self._writer: TextIO | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> TextIO:
        read_fd, write_fd = os.pipe()
        reader = open(read_fd, encoding="utf-8", errors="replace")  # the thread's
        self._writer = open(write_fd, "w", encoding="utf-8")  # closed on exit
        self._thread = threading.Thread(
            target=self._read, args=(reader,), name=f"stderr of {self.label}", daemon=True
        )
        self._thread.start()
        return self._writer

    def __exit__(self, *exc: object) -> None:
        # The server has its own copy of the pipe's end: ours goes, the reader ends when the
        # server's does (it exited).
        if self._writer is not None:
            self._writer.close()
        if self._thread is not None:  # its last lines, for a message about why it stopped
            self._thread.join(timeout=0.5)

    def _read(self, reader: TextIO) -> None:
        with reader:
            for line in reader:
                text = line.rstrip("\n")
                self.lines.append(text)
                log.info("%s: %s", self.label, text)
