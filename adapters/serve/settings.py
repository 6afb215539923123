"""Configuration: environment variables, read once at the edge by pydantic-settings."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from adapters.ops.log_format import LOG_FORMATS, TEXT
from bot import ConfigurationError
from bot.doors.addresses import read_address

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///hitl-bridge.db"
# The stores there are: SQLite through aiosqlite, PostgreSQL through asyncpg (plain names are
# mapped to those drivers).
DATABASE_SCHEMES = ("sqlite+aiosqlite", "sqlite", "postgresql+asyncpg", "postgresql", "postgres")
MIN_ADMIN_SECRET = 24  # characters of HITL_ADMIN_TOKEN and HITL_ADMIN_SESSION_KEY, at least
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")  # HITL_LOG_LEVEL
SCRIPTED_MODEL = "scripted"  # HITL_MODEL: the scripted demo model (bot/agent/scripted.py), no API


class Settings(BaseSettings):
    """Every setting of `hitl-bridge`; secrets are SecretStr so they never reach a log."""

    model_config = SettingsConfigDict(env_file=".env", extra="ignore", populate_by_name=True)

    database_url: str = Field(DEFAULT_DATABASE_URL, alias="HITL_DATABASE_URL")
    host: str = Field("127.0.0.1", alias="HITL_HOST")
    port: int = Field(3000, alias="HITL_PORT", ge=0, le=65535)
    timeout_seconds: float = Field(300.0, alias="HITL_TIMEOUT_SECONDS", gt=0)
    # How long a worker's hold on a room's run lasts unrenewed: a dead worker's runs are
    # resumed elsewhere within 1.5 leases.
    lease_seconds: float = Field(10.0, alias="HITL_LEASE_SECONDS", gt=0)
    # How often a wait on a request another worker holds re-reads its row (PostgreSQL's NOTIFY
    # tells at once; this bounds what a lost one costs).
    recheck_seconds: float = Field(5.0, alias="HITL_RECHECK_SECONDS", gt=0)
    # The Anthropic model, or "scripted": the scripted demo model, which `serve` runs only
    # when asked for it so (`demo` also falls back to it without ANTHROPIC_API_KEY).
    model: str = Field("claude-sonnet-5-5", alias="HITL_MODEL")
    # The agent file (prompt, model, human tools, MCP servers and Python tools); `--agent`.
    agent_file: Path | None = Field(None, alias="HITL_AGENT_FILE")
    admins: Annotated[frozenset[str], NoDecode] = Field(frozenset(), alias="HITL_ADMINS")
    approvers: Annotated[frozenset[str], NoDecode] = Field(frozenset(), alias="HITL_APPROVERS")
    # Argument keys whose values the audit log never keeps (any case, any depth), beside the
    # agent file's `redact` (bot/audit/redaction.py).
    audit_redact: Annotated[frozenset[str], NoDecode] = Field(
        frozenset(), alias="HITL_AUDIT_REDACT"
    )
    anthropic_api_key: SecretStr | None = Field(None, alias="ANTHROPIC_API_KEY")
    anthropic_base_url: str | None = Field(None, alias="ANTHROPIC_BASE_URL")
    slack_bot_token: SecretStr | None = Field(None, alias="SLACK_BOT_TOKEN")
    slack_signing_secret: SecretStr | None = Field(None, alias="SLACK_SIGNING_SECRET")
    slack_app_token: SecretStr | None = Field(None, alias="SLACK_APP_TOKEN")
    slack_api_url: str | None = Field(None, alias="SLACK_API_URL")
    teams_client_id: str | None = Field(None, alias="TEAMS_CLIENT_ID")
    teams_client_secret: SecretStr | None = Field(None, alias="TEAMS_CLIENT_SECRET")
    teams_tenant_id: str | None = Field(None, alias="TEAMS_TENANT_ID")
    teams_allow_unauthenticated: bool = Field(False, alias="HITL_TEAMS_ALLOW_UNAUTHENTICATED")
    # Seconds between two pieces of a reply streamed in a Teams personal chat (Teams takes
    # about one a second; tests go faster against the fake Bot Connector).
    teams_stream_interval: float = Field(1.0, alias="HITL_TEAMS_STREAM_INTERVAL", ge=0, le=10)
    # The doors (the HTTP API, MCP): how long a request made there lasts unless it says.
    door_timeout_seconds: float = Field(3600.0, alias="HITL_DOOR_TIMEOUT_SECONDS", gt=0)
    # Webhooks to loopback and private addresses: for local set-ups and tests only.
    webhook_allow_private: bool = Field(False, alias="HITL_WEBHOOK_ALLOW_PRIVATE")
    # How long one webhook attempt may take (a receiver that never answers holds a slot so long).
    webhook_timeout_seconds: float = Field(10.0, alias="HITL_WEBHOOK_TIMEOUT_SECONDS", gt=0, le=300)
    # Long polls (`GET /api/v1/requests/{id}?wait=`, MCP calls waiting on an answer) one token,
    # and one worker, may hold at once; more are refused (429, Retry-After).
    long_polls_per_token: int = Field(100, alias="HITL_LONG_POLLS_PER_TOKEN", ge=1)
    long_polls_per_worker: int = Field(1000, alias="HITL_LONG_POLLS_PER_WORKER", ge=1)
    # AG-UI agent turns one token may run at once on a worker (each a model call or a request).
    ag_ui_turns_per_token: int = Field(10, alias="HITL_AG_UI_TURNS_PER_TOKEN", ge=1)
    mcp_default_to: str | None = Field(None, alias="HITL_MCP_DEFAULT_TO")
    a2a_default_to: str | None = Field(None, alias="HITL_A2A_DEFAULT_TO")
    # Where callers reach this service (behind a proxy): the A2A card's interfaces are under it.
    public_url: str | None = Field(None, alias="HITL_PUBLIC_URL")
    # The browser origins the MCP door accepts (adapters/doors/mcp/origins.py); default:
    # public_url's.
    allowed_origins: Annotated[frozenset[str], NoDecode] = Field(
        frozenset(), alias="HITL_ALLOWED_ORIGINS"
    )
    # Who may answer what (bot/policies/); without one, the actor, approvers and admins.
    policy_file: Path | None = Field(None, alias="HITL_POLICY_FILE")
    # The admin console (adapters/doors/admin): a token that signs in besides admin tokens of
    # `tokens create --admin`; the key of its session cookies (set it when several workers
    # serve /admin; else each makes its own); Secure cookies (default: when served over https).
    admin_token: SecretStr | None = Field(None, alias="HITL_ADMIN_TOKEN")
    admin_session_key: SecretStr | None = Field(None, alias="HITL_ADMIN_SESSION_KEY")
    admin_cookie_secure: bool | None = Field(None, alias="HITL_ADMIN_COOKIE_SECURE")
    # What `serve` logs of its own (a line at start, one per request asked and settled at
    # INFO); the libraries it uses log their warnings only. `--verbose` logs everything.
    log_level: str = Field("INFO", alias="HITL_LOG_LEVEL")
    # How each line is written: text for people, or one JSON object a line
    # (adapters/ops/log_format.py).
    log_format: str = Field(TEXT, alias="HITL_LOG_FORMAT")
    # Prometheus metrics (adapters/ops/metrics.py) on their own port, never the public one: off
    # unless set; `9464` alone is 127.0.0.1:9464, `0.0.0.0:9464` exposes them to the network.
    metrics_address: str | None = Field(None, alias="HITL_METRICS_ADDRESS")
    # How long the gauges read from the database (requests pending, webhook backlog) are kept:
    # however many scrape, the database is read at most once in it.
    metrics_database_seconds: float = Field(15.0, alias="HITL_METRICS_DATABASE_SECONDS", gt=0)

    @property
    def scripted_model(self) -> bool:
        """HITL_MODEL=scripted: the scripted demo model was asked for."""
        return self.model.strip().lower() == SCRIPTED_MODEL

    @property
    def has_anthropic_key(self) -> bool:
        return self.anthropic_api_key is not None and bool(
            self.anthropic_api_key.get_secret_value().strip()
        )

    @field_validator("database_url")
    @classmethod
    def _known_database(cls, value: str) -> str:
        scheme, sep, _ = value.partition("://")
        if not sep or scheme.lower() not in DATABASE_SCHEMES:
            raise ValueError(
                "must start with sqlite+aiosqlite:/// (a SQLite file) or "
                "postgresql+asyncpg:// (a PostgreSQL server)"
            )
        return value

    @field_validator("log_level")
    @classmethod
    def _a_level(cls, value: str) -> str:
        level = value.strip().upper()
        if level not in LOG_LEVELS:
            raise ValueError(f"must be one of {', '.join(LOG_LEVELS)}")
        return level

    @field_validator("log_format")
    @classmethod
    def _a_format(cls, value: str) -> str:
        kind = value.strip().lower()
        if kind not in LOG_FORMATS:
            raise ValueError(f"must be one of {', '.join(LOG_FORMATS)}")
        return kind

    @field_validator("metrics_address")
    @classmethod
    def _host_and_port(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        host, port = metrics_host_port(value)
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    @property
    def metrics_listen(self) -> tuple[str, int] | None:
        """Where the metrics are served (HITL_METRICS_ADDRESS), or None: not served."""
        return metrics_host_port(self.metrics_address) if self.metrics_address else None

    @field_validator("mcp_default_to", "a2a_default_to")
    @classmethod
    def _an_address(cls, value: str | None) -> str | None:
        if value:
            read_address(value)  # its UnknownAddressError (a ValueError) says what is wrong
        return value or None

    def check_database(self) -> None:
        """ConfigurationError if the database cannot be where HITL_DATABASE_URL says: a SQLite
        file in a directory that does not exist (SQLite creates the file, not the directory)."""
        path = sqlite_path(self.database_url)
        if path is not None and not path.parent.is_dir():
            raise ConfigurationError(
                f"the directory {path.parent} of the SQLite database in HITL_DATABASE_URL "
                f"does not exist: create it (mkdir -p {path.parent}) or set HITL_DATABASE_URL "
                "to a file in an existing directory"
            )

    @field_validator("admin_token", "admin_session_key")
    @classmethod
    def _long_secret(cls, value: SecretStr | None) -> SecretStr | None:
        """An admin token or session key guessable by brute force is refused; empty is unset."""
        if value is None or not value.get_secret_value().strip():
            return None
        if len(value.get_secret_value()) < MIN_ADMIN_SECRET:
            raise ValueError(f"must be at least {MIN_ADMIN_SECRET} characters")
        return value

    @field_validator("admins", "approvers", "audit_redact", mode="before")
    @classmethod
    def _split_ids(cls, value: object) -> object:
        """`HITL_ADMINS=U1,U2` (commas or spaces) as a set of user ids."""
        if isinstance(value, str):
            return frozenset(part for part in value.replace(",", " ").split() if part)
        return value

    @field_validator("allowed_origins", mode="before")
    @classmethod
    def _origins(cls, value: object) -> object:
        """`HITL_ALLOWED_ORIGINS=https://a.example,https://b.example`, each an http(s) origin."""
        if isinstance(value, str):
            from adapters.doors.mcp.origins import origin_of  # aiohttp: when it is set only

            return frozenset(origin_of(part) for part in value.replace(",", " ").split())
        return value


def metrics_host_port(value: str) -> tuple[str, int]:
    """`HOST:PORT`, `[IPv6]:PORT`, `:PORT` or `PORT` (then on 127.0.0.1); ValueError saying
    what is expected otherwise."""
    text = value.strip()
    host, colon, port = text.rpartition(":")
    if not colon:
        host, port = "", text
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) <= 65535 or any(c.isspace() for c in host):
        raise ValueError("must be PORT or HOST:PORT (for example 127.0.0.1:9464)")
    return host, int(port)


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite URL (`sqlite:///relative`, `sqlite:////absolute`); None otherwise."""
    scheme, _, rest = url.partition("://")
    if not scheme.lower().startswith("sqlite"):
        return None
    path = rest.removeprefix("/").split("?", 1)[0]
    return Path(path) if path and path != ":memory:" else None


def shown_url(url: str) -> str:
    """A database URL as it may be printed or logged: its password, if any, as `***`."""
    from bot.store.engine import shown_url as store_shown_url  # SQLAlchemy: when needed only

    return store_shown_url(url)


def settings_problem(err: ValidationError) -> str:
    """What is wrong with the environment, in one line, by variable (values are not repeated:
    some are secrets)."""
    problems = []
    for error in err.errors():
        where = ".".join(str(part) for part in error["loc"]) or "the settings"
        problems.append(f"{where}: {error['msg'].removeprefix('Value error, ')}")
    return "bad configuration: " + "; ".join(problems)
