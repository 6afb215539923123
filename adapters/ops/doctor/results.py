"""What one check found: passed, failed (with the fix) or skipped (and why). Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Status = Literal["ok", "failed", "skipped"]
SHOWN_CHARS = 4  # of a secret, before the ellipsis: enough to tell which one is set


@dataclass(frozen=True, slots=True)
class Result:
    """One line of the doctor: `check` names what was checked, `detail` what was found,
    `fix` what to do about a failure (empty for a pass or a skip)."""

    check: str
    status: Status
    detail: str
    fix: str = ""

    @property
    def ok(self) -> bool | None:
        """True passed, False failed, None skipped (not configured)."""
        return None if self.status == "skipped" else self.status == "ok"

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "ok": self.ok, "detail": self.detail, "fix": self.fix}


def passed(check: str, detail: str) -> Result:
    return Result(check, "ok", detail)


def failed(check: str, detail: str, fix: str) -> Result:
    return Result(check, "failed", detail, fix)


def skipped(check: str, why: str) -> Result:
    return Result(check, "skipped", why)


def shown_secret(secret: str) -> str:
    """A secret as the doctor prints it: its first characters and an ellipsis, never more
    (a short one shows nothing of itself)."""
    if len(secret) <= 2 * SHOWN_CHARS:
        return "…"
    return secret[:SHOWN_CHARS] + "…"
