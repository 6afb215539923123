"""The `A2A-Version` header, checked before the SDK sees it: the SDK copies the header whole
into its error and into a WARNING on every call it refuses. Here a caller's version is cut to
`MAX_SHOWN` characters (on one line) wherever it is repeated, and a refused one is logged once
per distinct value every `EVERY` seconds."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from a2a.utils.constants import PROTOCOL_VERSION_CURRENT
from packaging.version import InvalidVersion, Version

from adapters.serve.http_limits import one_line

MAX_SHOWN = 32  # characters of a caller's version repeated in a log line or an error
EVERY = 600.0  # seconds between two lines about the same refused version
MAX_KEPT = 256  # distinct versions remembered: beyond, the oldest are forgotten
HEADER = "A2A-Version"


def shown(version: str) -> str:
    return one_line(version, MAX_SHOWN) if version else "none (0.3)"


def compatible(version: str) -> bool:
    """Whether the door speaks `version`: 1.x, as the SDK's check (no header means 0.3)."""
    if version == PROTOCOL_VERSION_CURRENT:
        return True
    try:
        return Version(version).major == Version(PROTOCOL_VERSION_CURRENT).major
    except InvalidVersion:
        return False


class RefusedVersions:
    """Logs a refused version once per distinct (cut) value per `every` seconds."""

    def __init__(
        self, logger: logging.Logger, every: float = EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:  # fmt: skip
        self._logger, self._every, self._clock = logger, every, clock
        self._said: dict[str, float] = {}

    def refused(self, version: str, remote: str | None) -> None:
        value, now = shown(version), self._clock()
        said = self._said.get(value)
        if said is not None and now - said < self._every:
            return
        if said is None and len(self._said) >= MAX_KEPT:
            self._said = {k: t for k, t in self._said.items() if now - t < self._every}
            while len(self._said) >= MAX_KEPT:  # all recent: forget the oldest
                del self._said[min(self._said, key=self._said.__getitem__)]
        self._said[value] = now
        self._logger.warning(
            "A2A: refused %s '%s' from %s (this door speaks %s; said once a value per %d min)",
            HEADER, value, remote, PROTOCOL_VERSION_CURRENT, self._every // 60,
        )  # fmt: skip
