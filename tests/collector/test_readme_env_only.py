"""The README's environment-only setup, run as printed: its agent.py under
`opentelemetry-instrument`, configured by nothing but OTEL_EXPORTER_OTLP_ENDPOINT /
_PROTOCOL / _HEADERS (the SDK's exporters read them), against a real server with API keys,
over gRPC and then OTLP/HTTP. And the README's table of capture switches names every content
switch that the committed captures set. Then the rest of the README as a newcomer meets it:
the quickstart, every curl, the recording helper, the web view, the CI commands (each block as
printed, against a real server) and its command table against `tooltrail`'s own."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.server import Server, running_server
from tooltrail.collector.cli import registry

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


# The rest of the README, as a newcomer runs it: each block of a section, with the ports of a
# real server in place of 4317 / 4318 (the only change), and the answers the prose promises.
BLOCK = re.compile(r"```(\w*)\n(.*?)```", re.S)
CURL = "curl() { command curl -sS --fail-with-body -w '\\n' \"$@\"; }\nset -e\n"


def section_blocks(heading: str, language: str) -> list[str]:
    """The ```language blocks from `heading` up to the next heading of its level or above."""
    start = README.index(f"\n{heading}\n")
    level = heading.split(" ")[0]
    ends = [README.find(f"\n{'#' * n} ", start + 1) for n in range(1, len(level) + 1)]
    end = min([e for e in ends if e != -1], default=len(README))
    return [m.group(2) for m in BLOCK.finditer(README, start, end) if m.group(1) == language]


def on(server: Server, text: str) -> str:
    return (text.replace("127.0.0.1:4317", f"127.0.0.1:{server.grpc_port}")
            .replace("127.0.0.1:4318", f"127.0.0.1:{server.http_port}"))


def run_sh(server: Server, block: str, cwd: Path) -> list[str]:
    """A shell block as printed; `curl` fails on an error answer, each answer on a line."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-c", CURL + on(server, block)], capture_output=True,
                          text=True, timeout=180, cwd=cwd, env=env, check=False)
    assert done.returncode == 0, (block, done.stdout, done.stderr)
    return done.stdout.splitlines()


def run_python(server: Server, block: str, path: Path) -> None:
    path.write_text(on(server, block))
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          timeout=120, cwd=path.parent, check=False)
    assert done.returncode == 0 and not done.stderr, done.stderr


def documented(pattern: str) -> str:
    found = re.search(pattern, README, re.S)
    assert found is not None, pattern
    return found.group(1)


def test_readme_walkthrough_as_printed(tmp_path: Path) -> None:
    """Quickstart, verdicts, explicit capture, the recording helper, the web view and the CI
    commands, in the README's order, against one real server (issue 11's acceptance)."""
    run: list[str] = []
    with running_server(f"sqlite:///{tmp_path / 'readme.db'}") as server:
        (agent,) = section_blocks("## Quickstart (two minutes)", "python")
        run_python(server, agent, tmp_path / "quickstart.py")
        expectation, verdicts = section_blocks("## Quickstart (two minutes)", "sh")[:2]
        run += [expectation, verdicts]
        (created,) = map(json.loads, run_sh(server, expectation, tmp_path))
        assert created["selects"] == json.loads(documented(r'`"selects": (\{.*?\})`'))
        server.wait_for("/api/v1/conversations/refund-lazy/results", lambda b: b["data"])
        good, lazy = map(json.loads, run_sh(server, verdicts, tmp_path))
        assert [r["passed"] for r in good["data"]] == [True]
        (failed,) = lazy["data"]
        assert failed["passed"] is False and failed["recall"] == 0 and failed["differences"]
        assert failed["reason"] == documented(r'``"reason": "(.*?)"``')

        capture = "## Capture without OpenTelemetry"
        (explicit,) = section_blocks(capture, "sh")
        run.append(explicit)
        (answer,) = map(json.loads, run_sh(server, explicit, tmp_path))
        assert answer["calls"] == 1 and answer["skipped"] == []
        with server.client() as client:
            conversation = client.get("/api/v1/conversations/refund-good").json()
        # merged into the traced turn 0: one call, the explicit one; counted once
        assert [[(c["name"], c["call_id"], c["source"]) for c in t["tool_calls"]]
                for t in conversation["turns"]] == [
            [("lookup_order", "call_1", "explicit")], [("issue_refund", None, "otel")]]
        assert (conversation["turn_count"], conversation["call_count"]) == (2, 2)
        (record,) = section_blocks(capture, "python")
        run_python(server, record, tmp_path / "record.py")
        recorded = server.wait_for("/api/v1/conversations/refund-recorded", lambda b: True)
        assert [[c["name"] for c in t["tool_calls"]] for t in recorded["turns"]] == [
            ["lookup_order", "issue_refund"]]

        with server.client() as client:  # "open http://127.0.0.1:4318/ (it redirects to /ui/)"
            page = client.get("/", follow_redirects=True)
        assert page.status_code == 200 and str(page.url).endswith("/ui/")
        assert "refund-good" in page.text

        ci = section_blocks("## Use it in CI", "sh")[0]
        # `check` exits 1 here, as the README says: the shell goes on and prints the status
        ci = re.sub(r"^(tooltrail check [^#\n]*?) *(#.*)?$", r"\1 || echo exit $?", ci,
                    flags=re.M)
        output = "\n".join(run_sh(server, ci, tmp_path))
        assert "created refund-checked (version 1)" in output
        assert re.search(r"FAIL +refund-checked +refund-lazy", output), output
        assert re.search(r"PASS +refund-checked +refund-good", output), output
        assert "exit 1" in output and "id: refund-good" in output

    env_only = readme_block("sh")  # run by test_readme_env_only_agent_over_grpc_and_http
    curls = [m.group(2) for m in BLOCK.finditer(README) if "curl " in m.group(2)]
    assert curls and [c for c in curls if c not in run and c != env_only] == []


def test_readme_lists_every_command_and_each_has_help() -> None:
    """The README's command table is `tooltrail`'s own list, and every entry's --help runs."""
    table = README[README.index("## Commands"):README.index("## The web view")]
    listed = re.findall(r"^\| `tooltrail ((?:bench )?[a-z][a-z-]*)", table, re.M)
    commands = registry()
    names = {*commands.commands, *commands.programs} - {"bench"}
    assert sorted(listed) == sorted(names | {f"bench {t}" for t in commands.bench})
    for name in listed:
        done = subprocess.run([sys.executable, "-m", "tooltrail", *name.split(), "--help"],
                              capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0 and done.stdout.startswith("usage: "), (name, done.stderr)
        assert name.split()[-1] in done.stdout.splitlines()[0], done.stdout
