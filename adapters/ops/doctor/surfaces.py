"""Whether any surface is set up: without Slack and Teams `serve` refuses to start
(adapters/serve/service.py), so the doctor fails it with the fix, rather than skip both quietly."""

from __future__ import annotations

from adapters.ops.doctor.results import Result, failed, passed
from adapters.serve.settings import Settings

SURFACES = "surfaces"
FIX = (
    "set SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET for Slack, or TEAMS_CLIENT_ID and "
    "TEAMS_CLIENT_SECRET for Teams (both sets: both); `hitl-bridge demo` needs neither"
)


async def surfaces(settings: Settings, teams: bool) -> list[Result]:
    """`teams`: whether Teams is set up, even half."""
    served = []
    if settings.slack_bot_token is not None or settings.slack_signing_secret is not None:
        served.append("Slack")
    if teams:
        served.append("Teams")
    if not served:
        return [failed(SURFACES, "no surface configured (neither Slack nor Teams): `serve` "
                       "refuses to start", FIX)]  # fmt: skip
    return [passed(SURFACES, f"{' and '.join(served)} set up")]
