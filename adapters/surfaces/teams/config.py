"""Whether `serve` serves Teams, and how: read from the settings alone, so that deciding it
does not import the Teams SDK (seconds) for a service that serves Slack only."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from adapters.serve.settings import Settings
from bot import ConfigurationError

log = logging.getLogger(__name__)

# Without TEAMS_CLIENT_ID, the SDK falls back to CLIENT_ID (and CLIENT_SECRET, TENANT_ID) from
# the environment: credentials we did not configure, for a mode that promises none.
SDK_CLIENT_ID = "CLIENT_ID"
SDK_CREDENTIALS_FOUND = (
    "CLIENT_ID is set in the environment and the Teams SDK would use it: set TEAMS_CLIENT_ID "
    "and TEAMS_CLIENT_SECRET instead, or unset it to run unauthenticated"
)


@dataclass(frozen=True, slots=True)
class TeamsConfig:
    """How Teams is enabled: the app's credentials, or (development only) no authentication."""

    client_id: str | None = None
    client_secret: str | None = None
    tenant_id: str | None = None
    stream_interval: float = 1.0  # seconds between two pieces of a streamed reply

    @property
    def authenticated(self) -> bool:
        return self.client_id is not None


def teams_config(settings: Settings) -> TeamsConfig | None:
    """The Teams configuration, None when Teams is not enabled, or ConfigurationError when it
    is half set up. With credentials, incoming activities are always verified."""
    client_id = settings.teams_client_id or None
    secret = settings.teams_client_secret.get_secret_value() if settings.teams_client_secret else ""
    tenant_id = settings.teams_tenant_id or None
    if client_id or secret or tenant_id:
        missing = [
            name
            for name, value in (("TEAMS_CLIENT_ID", client_id), ("TEAMS_CLIENT_SECRET", secret))
            if not value
        ]
        if missing:
            raise ConfigurationError(f"Teams needs {' and '.join(missing)} to be set")
        if settings.teams_allow_unauthenticated:
            log.warning("Teams credentials are set: HITL_TEAMS_ALLOW_UNAUTHENTICATED is ignored")
        return TeamsConfig(client_id, secret, tenant_id, settings.teams_stream_interval)
    if settings.teams_allow_unauthenticated:
        if os.environ.get(SDK_CLIENT_ID):
            raise ConfigurationError(SDK_CREDENTIALS_FOUND)
        return TeamsConfig(stream_interval=settings.teams_stream_interval)
    return None
