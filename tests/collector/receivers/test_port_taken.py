"""A second `tooltrail serve` on ports a first one holds exits 2 with a clear message, on
each transport in turn, and the first keeps receiving everything (before the fix, gRPC's
default SO_REUSEPORT let the second share port 4317 and spans split between two databases)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpExporter,
)

from tests.server import Server, running_server
from tests.spans import ToolStep, agent_turn, provider

CONVERSATIONS = 10  # each on a new connection: a shared port would hand some to the intruder


def second_serve(
    tmp_path: Path, http_port: int, grpc_port: int
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "tooltrail", "serve", "--host", "127.0.0.1",
               "--database-url", f"sqlite:///{tmp_path / 'second.db'}", "--no-worker",
               "--http-port", str(http_port), "--grpc-port", str(grpc_port)]
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=60,
                              start_new_session=True)
    except subprocess.TimeoutExpired as exc:  # run() killed it: it was serving
        log = exc.stderr.decode() if isinstance(exc.stderr, bytes) else str(exc.stderr)
        pytest.fail(f"the second serve kept running on taken ports:\n{log}")


def export_everywhere(server: Server, prefix: str) -> list[str]:
    keys = [f"{prefix}-{i}" for i in range(CONVERSATIONS)]
    for i, key in enumerate(keys):
        exporter = (GrpcExporter(endpoint=server.grpc_endpoint, insecure=True) if i % 2 == 0
                    else HttpExporter(endpoint=f"{server.base_url}/v1/traces"))
        tp = provider(exporter)  # a provider (and so a connection) per conversation
        agent_turn(tp, key, [ToolStep("lookup", {"n": i}, i)])
        tp.shutdown()
    return keys


@pytest.mark.parametrize("taken", ["grpc", "http"])
def test_second_serve_on_taken_port_exits_2(
    database_url: str, tmp_path: Path, taken: str
) -> None:
    with running_server(database_url) as first:
        if taken == "grpc":
            result = second_serve(tmp_path, 0, first.grpc_port)
            expected = (f"cannot listen for OTLP/gRPC on 127.0.0.1:{first.grpc_port}: "
                        "the address is in use")
            flag = "--grpc-port"
        else:
            result = second_serve(tmp_path, first.http_port, 0)
            expected = (f"cannot listen for OTLP/HTTP and the REST API on "
                        f"127.0.0.1:{first.http_port}: the address is in use")
            flag = "--http-port"
        assert result.returncode == 2, result.stderr
        assert expected in result.stderr and flag in result.stderr
        assert "tooltrail listening" not in result.stderr
        assert "Traceback" not in result.stderr

        keys = export_everywhere(first, f"taken-{taken}")
        with first.client() as client:
            listed = client.get("/api/v1/conversations", params={"limit": 100}).json()["data"]
            assert sorted(c["key"] for c in listed) == sorted(keys)
            for key in keys:
                body = client.get(f"/api/v1/conversations/{key}").json()
                assert [c["name"] for t in body["turns"] for c in t["tool_calls"]] == ["lookup"]
