"""A file field's accepted types as Slack's `file_input.filetypes` (bare extensions).

Only a pre-filter in Slack's picker: whether a file is accepted is the core's check when the
answer is taken (uploadFile's `check_answer`), so an entry we cannot map turns the filter off
rather than refusing files the core would accept.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_MIME_EXTENSIONS: dict[str, tuple[str, ...]] = {
    "application/pdf": ("pdf",),
    "application/json": ("json",),
    "application/zip": ("zip",),
    "application/gzip": ("gz",),
    "application/msword": ("doc",),
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ("docx",),
    "application/vnd.ms-excel": ("xls",),
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ("xlsx",),
    "application/vnd.ms-powerpoint": ("ppt",),
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ("pptx",),
    "text/plain": ("txt",),
    "text/csv": ("csv",),
    "text/markdown": ("md",),
    "text/html": ("html", "htm"),
    "image/png": ("png",),
    "image/jpeg": ("jpg", "jpeg"),
    "image/gif": ("gif",),
    "image/webp": ("webp",),
    "image/svg+xml": ("svg",),
    "image/heic": ("heic",),
    "video/mp4": ("mp4",),
    "audio/mpeg": ("mp3",),
}
_EXTENSION = re.compile(r"^[a-z0-9][a-z0-9+_-]{0,15}$")


@dataclass(frozen=True, slots=True)
class AcceptedTypes:
    """Accepted types, normalised: extensions Slack can filter on, MIME patterns."""

    extensions: tuple[str, ...] = ()
    mimetypes: tuple[str, ...] = ()
    any: bool = True
    # An entry we could not turn into extensions (an unknown MIME type): Slack's own filter
    # would then refuse files the core accepts, so it is left off.
    unmapped: bool = False

    def slack_filetypes(self) -> list[str] | None:
        """`file_input.filetypes`, or None when Slack should not pre-filter."""
        return None if self.any or self.unmapped else list(self.extensions)


def accepted_types(entries: Iterable[str]) -> AcceptedTypes:
    """Normalise ".pdf", "pdf", "*.PDF", "application/pdf", "image/*" and "*" alike."""
    extensions: dict[str, None] = {}  # ordered set
    mimetypes: list[str] = []
    unmapped = False
    for raw in entries:
        entry = raw.strip().lower()
        if entry in ("*", "*/*", "*.*"):
            return AcceptedTypes()
        if "/" in entry:
            mimetypes.append(entry)
            known = [
                e for m, exts in _MIME_EXTENSIONS.items() if _mime_match(entry, m) for e in exts
            ]
            unmapped = unmapped or not known
            extensions.update(dict.fromkeys(known))
        elif _EXTENSION.match(bare := entry.removeprefix("*").removeprefix(".")):
            extensions[bare] = None
        else:
            unmapped = True
    if not extensions and not mimetypes:
        return AcceptedTypes(any=not unmapped, unmapped=unmapped)
    return AcceptedTypes(tuple(extensions), tuple(mimetypes), any=False, unmapped=unmapped)


def _mime_match(pattern: str, mime: str) -> bool:
    return pattern == mime or (pattern.endswith("/*") and mime.startswith(pattern[:-1]))
