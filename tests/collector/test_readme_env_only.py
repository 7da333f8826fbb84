"""The README's environment-only setup, run as printed: its agent.py under
`opentelemetry-instrument`, configured by nothing but OTEL_EXPORTER_OTLP_ENDPOINT /
_PROTOCOL / _HEADERS (the SDK's exporters read them), against a real server with API keys,
over gRPC and then OTLP/HTTP. And the README's table of capture switches names every content
switch that the committed captures set."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.server import Server, running_server

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
SECTION = "### The same agent configured by the environment only"
KEYS = "ingest:env-ingest,read:env-read"
READ = {"authorization": "Bearer env-read"}


def readme_block(language: str) -> str:
    """The first ```language block of the env-only section."""
    start = README.index(SECTION)
    match = re.compile(rf"```{language}\n(.*?)```", re.S).search(README, start)
    assert match is not None, f"no {language} block after {SECTION!r}"
    return match.group(1)


def otel_env(**values: str) -> dict[str, str]:
    """The test's environment without any OTEL_* of its own, plus `values`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return {**env, **values}


def run_agent(agent: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    launcher = Path(sys.executable).parent / "opentelemetry-instrument"
    return subprocess.run([str(launcher), sys.executable, str(agent)], env=env, text=True,
                          capture_output=True, timeout=120, cwd=agent.parent)


def records(server: Server, transport: str, signal: str = "traces") -> float:
    text = httpx.get(f"{server.base_url}/metrics").text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if (sample.name == "tooltrail_ingest_records_total"
                    and sample.labels == {"signal": signal, "transport": transport}):
                return sample.value
    return 0.0


def turns(server: Server) -> list[list[tuple[str, object]]]:
    answer = httpx.get(f"{server.base_url}/api/v1/conversations/refund-env", headers=READ)
    if answer.status_code == 404:
        return []
    assert answer.status_code == 200, answer.text
    return [[(c["name"], c["arguments"]) for c in t["tool_calls"]]
            for t in answer.json()["turns"]]


def test_readme_env_only_agent_over_grpc_and_http(tmp_path: Path) -> None:
    shell = readme_block("sh")
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL",
                 "OTEL_EXPORTER_OTLP_HEADERS", "opentelemetry-instrument python agent.py"):
        assert name in shell
    agent = tmp_path / "agent.py"
    agent.write_text(readme_block("python"))
    code = agent.read_text()  # configured by the environment only
    assert "exporter" not in code.replace("no exporter", "") and "127.0.0.1" not in code
    headers = "authorization=Bearer%20env-ingest"  # as the README writes it
    with running_server(f"sqlite:///{tmp_path / 'env.db'}",
                        env={"TOOLTRAIL_API_KEYS": KEYS}) as server:
        runs = [
            ("grpc", "grpc", f"http://127.0.0.1:{server.grpc_port}"),
            ("http/protobuf", "http", f"http://127.0.0.1:{server.http_port}"),
        ]
        for count, (protocol, transport, endpoint) in enumerate(runs, start=1):
            before = records(server, transport)
            result = run_agent(agent, otel_env(
                OTEL_SERVICE_NAME="support-agent", OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
                OTEL_EXPORTER_OTLP_PROTOCOL=protocol, OTEL_EXPORTER_OTLP_HEADERS=headers))
            assert result.returncode == 0, result.stderr
            assert "Failed to export" not in result.stderr, result.stderr
            assert "Traceback" not in result.stderr, result.stderr
            assert records(server, transport) == before + 2  # agent + tool span
            assert turns(server) == [[("lookup_order", {"order_id": 42})]] * count

        # opentelemetry-instrument exports the agent's logs and metrics too, and they are
        # accepted (the README says so): the same agent, logging and counting one thing
        chatty = tmp_path / "chatty.py"
        chatty.write_text(agent.read_text() + (
            "import logging\nfrom opentelemetry import metrics\n"
            "metrics.get_meter('support-agent').create_counter('refunds').add(1)\n"
            "logging.getLogger('support').warning('refund issued')\n"))
        for protocol, transport, endpoint in runs:
            before = records(server, transport, "logs"), records(server, transport, "metrics")
            result = run_agent(chatty, otel_env(
                OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, OTEL_EXPORTER_OTLP_PROTOCOL=protocol,
                OTEL_EXPORTER_OTLP_HEADERS=headers,
                OTEL_PYTHON_LOGGING_AUTO_INSTRUMENTATION_ENABLED="true"))
            assert result.returncode == 0 and "Failed to export" not in result.stderr, (
                result.stderr)
            assert records(server, transport, "logs") == before[0] + 1
            assert records(server, transport, "metrics") == before[1] + 1

        # the key really comes from OTEL_EXPORTER_OTLP_HEADERS: without it nothing is stored
        refused = run_agent(agent, otel_env(
            OTEL_EXPORTER_OTLP_ENDPOINT=runs[1][2], OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf"))
        assert "Failed to export" in refused.stderr and "401" in refused.stderr
        assert len(turns(server)) == 4


def test_readme_names_every_capture_switch_the_captures_set() -> None:
    """Each content switch a committed capture turns on is in the README's table."""
    switch = re.compile(r"[A-Z_]*(?:CAPTURE_MESSAGE_CONTENT|SENSITIVE|TRACE_CONTENT|"
                        r"OPENINFERENCE_HIDE)[A-Z_]*|include_content")
    table = README[README.index("### Turning on tool-argument capture"):]
    seen: set[str] = set()
    for script in sorted((ROOT / "tests" / "captures").glob("*/capture.*")):
        seen.update(switch.findall(script.read_text()))
    assert {"include_content", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
            "SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE",
            "ENABLE_SENSITIVE_DATA"} <= seen  # the scan finds what the captures set
    missing = sorted(name for name in seen if name not in table)
    assert not missing, f"capture switches missing from the README table: {missing}"
