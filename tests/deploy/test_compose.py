"""deploy/compose.yaml against the Compose Specification's schema (tests/deploy/compose_spec),
and what it must say: PostgreSQL, a one-shot `db upgrade`, two workers started after it; its
settings (deploy/.env.example) are the bridge's own names, with no real secret."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from dotenv import dotenv_values

from adapters.serve.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "deploy" / "compose.yaml"
EXAMPLE = ROOT / "deploy" / ".env.example"
SCHEMA = json.loads((Path(__file__).parent / "compose_spec" / "compose-spec.json").read_text())
COMPOSE_ONLY = {"POSTGRES_PASSWORD"}  # the database container's, not the bridge's


def compose() -> dict[str, Any]:
    return dict(yaml.safe_load(COMPOSE.read_text()))


def test_the_file_is_valid_compose_and_a_broken_one_is_not() -> None:
    jsonschema.Draft7Validator(SCHEMA).validate(compose())
    broken = compose()
    broken["services"]["worker-1"]["depends_on"]["migrate"]["condition"] = "service_finished"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(SCHEMA).validate(broken)


def test_postgres_a_one_shot_upgrade_and_two_workers_after_it() -> None:
    services = compose()["services"]
    assert set(services) == {"db", "migrate", "worker-1", "worker-2"}
    assert services["db"]["image"].startswith("postgres:")
    assert services["migrate"]["command"] == ["hitl-bridge", "db", "upgrade"]
    assert services["migrate"]["restart"] == "no"
    assert services["migrate"]["depends_on"] == {"db": {"condition": "service_healthy"}}
    workers = [services["worker-1"], services["worker-2"]]
    for worker in workers:
        assert "command" not in worker  # the image's: hitl-bridge serve
        assert worker["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}
        assert worker["environment"]["HITL_DATABASE_URL"].startswith("postgresql+asyncpg://")
        assert "@db:5432/" in worker["environment"]["HITL_DATABASE_URL"]
        assert worker["env_file"] == ".env"
    assert len({worker["hostname"] for worker in workers}) == 2
    assert len({worker["ports"][0].split(":")[0] for worker in workers}) == 2


def test_the_example_settings_are_the_bridges_and_hold_no_secret() -> None:
    values = dotenv_values(EXAMPLE)
    names = {field.alias for field in Settings.model_fields.values()}
    assert set(values) - COMPOSE_ONLY <= names
    secrets = [name for name in values if name.endswith(("_TOKEN", "_SECRET", "_KEY", "WORD"))]
    assert secrets
    for name in secrets:
        assert "CHANGE-ME" in (values[name] or ""), name
    Settings(_env_file=EXAMPLE)  # the values the settings accept
