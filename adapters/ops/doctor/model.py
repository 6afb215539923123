"""The model: HITL_MODEL=scripted, or the Anthropic key and model answered by the API (one
model look-up, which spends no tokens)."""

from __future__ import annotations

from adapters.ops.doctor.results import Result, failed, passed, shown_secret
from adapters.serve.settings import Settings

MODEL = "model"
FIXES = {
    "key": "set ANTHROPIC_API_KEY to a live key of your Anthropic organisation",
    "model": "set HITL_MODEL (or the agent file's `model`) to a model this key may use",
    "unreachable": "check the network to the Anthropic API, or ANTHROPIC_BASE_URL if set",
    "other": "try again later; if it persists, check the Anthropic API's status",
}
NO_KEY_FIX = "set ANTHROPIC_API_KEY, or HITL_MODEL=scripted for the scripted demo model"


async def model(settings: Settings, model_name: str) -> list[Result]:
    """`model_name`: the model `serve` would ask (the agent file's, else HITL_MODEL)."""
    from bot.agent.provider import ModelRefusedError, probe_model

    if settings.scripted_model:
        return [passed(MODEL, "HITL_MODEL=scripted: the scripted demo model (no key, no API)")]
    if not settings.has_anthropic_key or settings.anthropic_api_key is None:
        return [failed(MODEL, "ANTHROPIC_API_KEY is unset: `serve` refuses to start", NO_KEY_FIX)]
    key = settings.anthropic_api_key.get_secret_value()
    try:
        name = await probe_model(model_name, api_key=key, base_url=settings.anthropic_base_url)
    except ModelRefusedError as err:
        what = f"{model_name} with ANTHROPIC_API_KEY ({shown_secret(key)}): {err}"
        return [failed(MODEL, what, FIXES[err.trouble])]
    return [passed(MODEL, f"{model_name} ({name}) answers ANTHROPIC_API_KEY ({shown_secret(key)})")]
