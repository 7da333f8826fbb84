"""The container, compose, Kubernetes and Collector files, checked with real parsers and schemas.

No container engine, Kubernetes cluster or Collector binary runs on these machines: the files are
validated (compose-spec JSON Schema, Kubernetes OpenAPI schemas, hadolint) and cross-checked
against each other and against the tooltrail command line they invoke."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from dockerfile_parse import DockerfileParser

from tests.dist import PACKAGES, SOURCES
from tests.server import Server, running_server
from tooltrail.collector.config import Settings

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
KUBE = DEPLOY / "kubernetes"


def load_all(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def dockerfile() -> DockerfileParser:
    parser = DockerfileParser(fileobj=io.BytesIO((DEPLOY / "Dockerfile").read_bytes()))
    return parser


def instructions(kind: str) -> list[str]:
    return [i["value"] for i in dockerfile().structure if i["instruction"] == kind]


def tooltrail_args_valid(args: list[str], env: dict[str, str] | None = None) -> None:
    """`tooltrail ARGS --help` exits 0: the command and its flags exist."""
    run = subprocess.run([sys.executable, "-m", "tooltrail", *args, "--help"],
                         capture_output=True, text=True, timeout=60, env=env)
    assert run.returncode == 0, (args, run.stderr)


# --- image -------------------------------------------------------------------------------------

def test_dockerfile_passes_hadolint() -> None:
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    run = subprocess.run([hadolint, str(DEPLOY / "Dockerfile")], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr


def test_image_runs_non_root_under_an_init_with_sqlite_in_its_volume() -> None:
    (user,) = instructions("USER")
    assert user.split(":")[0] not in ("root", "0")
    (entrypoint,) = instructions("ENTRYPOINT")
    assert json.loads(entrypoint)[:2] == ["tini", "--"]
    (volume,) = instructions("VOLUME")
    data_dir = json.loads(volume)[0]
    env = dockerfile().envs
    assert env["TOOLTRAIL_DATABASE_URL"] == f"sqlite:///{data_dir}/tooltrail.db"
    assert env["TOOLTRAIL_HOST"] == "0.0.0.0"
    tooltrail_args_valid(json.loads(instructions("CMD")[0]))


def test_image_copies_only_what_dockerignore_lets_through_and_installs_from_constraints() -> None:
    allowed = {line[1:].rstrip("/") for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.startswith("!")}
    copied: set[str] = set()
    for copy in instructions("COPY"):
        *sources, _dest = copy.split()
        if sources[0].startswith("--from="):  # from the build stage, not the checkout
            continue
        for source in sources:
            assert (ROOT / source).exists(), source
            assert source.rstrip("/") in allowed, f"{source} is excluded by .dockerignore"
            copied.add(source.rstrip("/"))
    # everything the wheel is built from, as tests/install builds and installs it
    assert set(SOURCES) | set(PACKAGES) <= copied
    (install,) = [r for r in instructions("RUN") if "pip install" in r]
    assert "--constraint constraints.txt" in install
    # CI installs from the same file (scripts/test is the README's test command)
    assert "constraints.txt" in (ROOT / "scripts" / "test").read_text()
    pins = [line for line in (ROOT / "constraints.txt").read_text().splitlines()
            if line and not line.startswith("#")]
    assert pins and all("==" in pin for pin in pins)


def healthcheck_command() -> list[str]:
    (value,) = instructions("HEALTHCHECK")
    command = json.loads(value.split("CMD", 1)[1].strip())
    assert isinstance(command, list)
    return [sys.executable if part == "python" else part for part in command]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'tooltrail.db'}"
    with running_server(url) as running:
        yield running


def test_image_healthcheck_passes_on_a_ready_server_and_fails_without_one(server: Server) -> None:
    env = {**os.environ, "TOOLTRAIL_HTTP_PORT": str(server.http_port)}
    ready = subprocess.run(healthcheck_command(), env=env, capture_output=True, timeout=30)
    assert ready.returncode == 0, ready.stderr
    server.process.send_signal(0)  # still running
    env["TOOLTRAIL_HTTP_PORT"] = "9"  # discard: nothing listens on loopback
    down = subprocess.run(healthcheck_command(), env=env, capture_output=True, timeout=30)
    assert down.returncode != 0


# --- compose -----------------------------------------------------------------------------------

def compose() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    assert isinstance(data, dict)
    return data


def test_compose_file_is_valid_compose_spec() -> None:
    schema_file = resources.files("check_jsonschema") / "builtin_schemas/vendor/compose-spec.json"
    schema = json.loads(schema_file.read_text())
    jsonschema.validate(compose(), schema)
    broken = compose()
    broken["services"]["worker"]["depends_on"] = {"tooltrail": {"condition": "when-it-feels"}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)


def test_compose_builds_one_image_and_starts_the_worker_once_serve_is_ready() -> None:
    services = compose()["services"]
    built = [name for name, s in services.items() if "build" in s]
    assert built == ["tooltrail"]
    image = services["tooltrail"]["image"]
    for name, service in services.items():
        assert service.get("restart") == "unless-stopped", name
        if name != "postgres":
            assert service["image"] == image
            assert "build" in service or service.get("pull_policy") == "never", name
            tooltrail_args_valid(service["command"])
    assert services["worker"]["depends_on"]["tooltrail"]["condition"] == "service_healthy"
    assert "/readyz" in " ".join(services["tooltrail"]["healthcheck"]["test"])
    assert services["tooltrail"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    (env_file,) = services["tooltrail"]["env_file"]
    example = ROOT / (env_file["path"] + ".example")
    keys = dict(line.split("=", 1) for line in example.read_text().splitlines()
                if line and not line.startswith("#"))
    assert set(keys) <= {f"TOOLTRAIL_{name.upper()}" for name in Settings.model_fields}
    assert env_file["path"] in (ROOT / ".gitignore").read_text()


# --- Kubernetes --------------------------------------------------------------------------------

def kustomization() -> dict[str, Any]:
    data = yaml.safe_load((KUBE / "kustomization.yaml").read_text())
    assert isinstance(data, dict)
    return data


def manifests() -> list[dict[str, Any]]:
    docs = [doc for name in kustomization()["resources"] for doc in load_all(KUBE / name)]
    component = yaml.safe_load((KUBE / "components/hpa/kustomization.yaml").read_text())
    assert component["kind"] == "Component"
    for name in component["resources"]:
        docs.extend(load_all(KUBE / "components/hpa" / name))
    return docs


def test_every_manifest_validates_against_the_kubernetes_schemas() -> None:
    docs = manifests()
    assert {d["kind"] for d in docs} >= {"Deployment", "Service", "Job", "Secret",
                                         "HorizontalPodAutoscaler"}
    for doc in docs:
        kubernetes_validate.validate(doc, kubernetes_validate.latest_version(), strict=True)
    bad = json.loads(json.dumps(docs[0]))
    bad["metadata"]["nmae"] = "typo"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, kubernetes_validate.latest_version(), strict=True)


def by_kind(kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in manifests() if d["kind"] == kind}


def pod_specs() -> dict[str, dict[str, Any]]:
    specs = {name: d["spec"]["template"] for name, d in by_kind("Deployment").items()}
    specs.update({name: d["spec"]["template"] for name, d in by_kind("Job").items()})
    return specs


def test_manifests_refer_to_each_other_and_to_real_settings_and_commands() -> None:
    secrets = by_kind("Secret")
    settings_env = {f"TOOLTRAIL_{name.upper()}" for name in Settings.model_fields}
    images = {i["name"] for i in kustomization()["images"]}
    for name, template in pod_specs().items():
        spec = template["spec"]
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        for container in spec["containers"]:
            assert container["image"] in images
            assert "resources" in container and "limits" in container["resources"]
            tooltrail_args_valid(container["args"])
            for ref in container.get("envFrom", []):
                secret = secrets[ref["secretRef"]["name"]]
                assert set(secret["stringData"]) <= settings_env
            for var in container.get("env", []):
                assert var["name"] in settings_env, var["name"]
            for mount in container.get("volumeMounts", []):
                volume = volumes[mount["name"]]
                if "secret" in volume:
                    secret = secrets[volume["secret"]["secretName"]]
                    keys = {item["key"] for item in volume["secret"]["items"]}
                    assert keys <= set(secret["stringData"])
    serve = pod_specs()["tooltrail-serve"]
    (container,) = serve["spec"]["containers"]
    assert container["args"] == ["serve", "--no-worker"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"otlp-grpc": 4317, "http": 4318}
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    env = {v["name"]: v["value"] for v in container["env"]}
    assert env["TOOLTRAIL_MIGRATE"] == "false"  # the Job migrates
    assert by_kind("Job")["tooltrail-migrate"]["spec"]["template"]["spec"]["containers"][0][
        "args"] == ["migrate"]
    labels = serve["metadata"]["labels"]
    for service in by_kind("Service").values():
        assert service["spec"]["selector"].items() <= labels.items()
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in ports
    for hpa in by_kind("HorizontalPodAutoscaler").values():
        assert hpa["spec"]["scaleTargetRef"]["name"] in by_kind("Deployment")


# --- OpenTelemetry Collector -------------------------------------------------------------------

def test_collector_config_pipelines_use_defined_components_and_reach_the_replicas() -> None:
    config = yaml.safe_load((DEPLOY / "otel-collector.yaml").read_text())
    for name, pipeline in config["service"]["pipelines"].items():
        for kind in ("receivers", "processors", "exporters"):
            for component in pipeline[kind]:
                assert component in config[kind], (name, component)
        assert pipeline["processors"][0] == "memory_limiter"
        assert pipeline["processors"][-1] == "batch"
    assert config["processors"]["redaction"]["allow_all_keys"] is True
    lb = config["exporters"]["loadbalancing"]
    assert lb["routing_key"] == "traceID"
    otlp = lb["protocol"]["otlp"]
    assert otlp["compression"] == "gzip" and otlp["retry_on_failure"]["enabled"] is True
    assert otlp["headers"]["authorization"].startswith("Bearer ")
    host = lb["resolver"]["dns"]["hostname"]
    headless = by_kind("Service")["tooltrail-headless"]
    assert host.startswith(f"{headless['metadata']['name']}.{kustomization()['namespace']}.")
    assert headless["spec"]["clusterIP"] == "None"
    assert lb["resolver"]["dns"]["port"] in [p["port"] for p in headless["spec"]["ports"]]


def test_deploy_md_says_what_probes_each_deployment_has() -> None:
    """docs/deploy.md's row of each Deployment names the probes its manifest declares (the
    worker's were added to the manifest while the page still said it had none)."""
    page = (ROOT / "docs" / "deploy.md").read_text()
    checked = 0
    for path in sorted((ROOT / "deploy" / "kubernetes").glob("*-deployment.yaml")):
        (deployment,) = [d for d in load_all(path) if d["kind"] == "Deployment"]
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        row = next(line for line in page.splitlines() if line.startswith(f"| `{path.name}` |"))
        for probe, word in (("livenessProbe", "liveness"), ("readinessProbe", "readiness")):
            if probe in container:
                checked += 1
                assert word in row and container[probe]["httpGet"]["path"] in row, (path, row)
    assert checked >= 4  # serve and worker, liveness and readiness each
    assert "no probes" not in page
