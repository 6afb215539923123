"""Webhook targets' policy: whether the SSRF rules on callback URLs (adapters/doors/api/
callback_urls.py: loopback, private, link-local… addresses refused, at create time and on
each address connected to) are on, and that they refuse what they must."""

from __future__ import annotations

from adapters.ops.doctor.results import Result, failed, passed
from adapters.serve.settings import Settings

WEBHOOKS = "webhook targets"
# What the rules must refuse, whatever else the deployment allows: its own loopback, a cloud's
# metadata service.
MUST_REFUSE = ("http://127.0.0.1/hook", "http://169.254.169.254/latest/meta-data/")


async def webhook_targets(settings: Settings) -> list[Result]:
    from adapters.doors.api.callback_urls import check_url

    if settings.webhook_allow_private:
        return [failed(
            WEBHOOKS,
            "HITL_WEBHOOK_ALLOW_PRIVATE=1: callback URLs may reach loopback and private "
            "addresses (this machine, the internal network, a cloud's metadata service)",
            "unset HITL_WEBHOOK_ALLOW_PRIVATE (it is for local set-ups and tests only)",
        )]  # fmt: skip
    let_through = [url for url in MUST_REFUSE if await check_url(url, allow_private=False) is None]
    if let_through:
        return [failed(WEBHOOKS, f"the SSRF rules let {', '.join(let_through)} through",
                       "report it: this version's callback URL checks are broken")]  # fmt: skip
    return [passed(
        WEBHOOKS,
        "callback URLs to loopback, private, link-local and other non-public addresses are "
        f"refused; each attempt times out after {settings.webhook_timeout_seconds:g} s",
    )]  # fmt: skip
