"""deploy/kubernetes: every manifest valid against Kubernetes' own schemas (kubernetes-validate,
strict: an unknown field is an error; the schemas ship in its wheel, nothing is fetched), and
the parts that must agree with each other and with the bridge's settings do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from adapters.serve.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = sorted((ROOT / "deploy" / "kubernetes").glob("*.yaml"))
VERSIONS = ["1.29", kubernetes_validate.utils.latest_version()]  # the oldest we claim, the newest
SETTINGS = {field.alias for field in Settings.model_fields.values()}


def manifest(kind: str) -> dict[str, Any]:
    found = [doc for path in MANIFESTS for doc in yaml.safe_load_all(path.read_text())]
    (only,) = [doc for doc in found if doc["kind"] == kind]
    return dict(only)


def pod(kind: str) -> dict[str, Any]:
    return dict(manifest(kind)["spec"]["template"]["spec"])


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_each_manifest_is_valid_against_the_schemas(path: Path, version: str) -> None:
    for doc in yaml.safe_load_all(path.read_text()):
        kubernetes_validate.validate(doc, version, strict=True)


def test_a_broken_manifest_is_refused() -> None:
    deployment = manifest("Deployment")
    misspelt = yaml.safe_load(yaml.safe_dump(deployment))
    container = misspelt["spec"]["template"]["spec"]["containers"][0]
    container["readinesProbe"] = container.pop("readinessProbe")
    with pytest.raises(kubernetes_validate.ValidationError, match="readinesProbe"):
        kubernetes_validate.validate(misspelt, VERSIONS[-1], strict=True)
    wrong_type = yaml.safe_load(yaml.safe_dump(deployment))
    wrong_type["spec"]["replicas"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(wrong_type, VERSIONS[-1], strict=True)


def test_two_workers_probed_and_not_root() -> None:
    deployment = manifest("Deployment")
    assert deployment["spec"]["replicas"] == 2
    (container,) = pod("Deployment")["containers"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert {"requests", "limits"} <= container["resources"].keys()
    for spec in (pod("Deployment"), pod("Job")):
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["runAsUser"] != 0
        for each in spec["containers"]:
            assert each["securityContext"]["allowPrivilegeEscalation"] is False
            assert each["securityContext"]["capabilities"]["drop"] == ["ALL"]


def test_the_probes_reach_the_port_the_settings_give() -> None:
    (container,) = pod("Deployment")["containers"]
    (port,) = container["ports"]
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        assert container[probe]["httpGet"]["port"] == port["name"]
    assert int(manifest("ConfigMap")["data"]["HITL_PORT"]) == port["containerPort"]
    assert manifest("Service")["spec"]["ports"][0]["targetPort"] == port["name"]


def test_the_service_and_the_budget_select_the_workers_and_not_the_job() -> None:
    workers = manifest("Deployment")["spec"]["template"]["metadata"]["labels"]
    job = manifest("Job")["spec"]["template"]["metadata"]["labels"]
    for selector in (
        manifest("Service")["spec"]["selector"],
        manifest("PodDisruptionBudget")["spec"]["selector"]["matchLabels"],
        manifest("Deployment")["spec"]["selector"]["matchLabels"],
    ):
        assert selector.items() <= workers.items()
        assert not selector.items() <= job.items()
    assert manifest("PodDisruptionBudget")["spec"]["minAvailable"] == 1


def test_the_job_upgrades_the_database_with_the_workers_settings() -> None:
    (container,) = pod("Job")["containers"]
    assert container["command"] == ["hitl-bridge", "db", "upgrade"]
    (worker,) = pod("Deployment")["containers"]
    assert container["image"] == worker["image"]
    assert container["envFrom"] == worker["envFrom"]
    names = {ref.get("configMapRef", ref.get("secretRef"))["name"] for ref in worker["envFrom"]}
    assert names == {manifest("ConfigMap")["metadata"]["name"]}


def test_the_secret_holds_placeholders_only_and_every_key_is_a_setting() -> None:
    secret = manifest("Secret")["stringData"]
    assert all("CHANGE-ME" in value for value in secret.values())
    config = manifest("ConfigMap")["data"]
    assert (secret.keys() | config.keys()) <= SETTINGS
    Settings(_env_file=None, **config, **secret)  # the values the settings accept
