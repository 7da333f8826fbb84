"""Verdicts exported as `gen_ai.evaluation.result` events: the real server's worker sends them
with the SDK's OTLP/HTTP log exporter to an OTLP/HTTP logs endpoint (an in-process receiver
decoding `ExportLogsServiceRequest` as the OTLP specification defines it), parented to the
judged turn's root span; an endpoint that is down is counted and never holds scoring up."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)

from tests.server import running_server

CAPTURE = Path(__file__).parents[2] / "captures" / "pydantic_ai" / "spans.otlp.json"
WEATHER = {"id": "weather", "selector": {"conversation": "conv-*"}, "match": "superset",
           "calls": [{"name": "get_weather"}]}
# the worker in the server's process: its export counters are on the server's /metrics
IN_SERVER = {"TOOLTRAIL_WORKER_PROCESS": "false"}


@contextmanager
def logs_receiver() -> Iterator[tuple[str, list[ExportLogsServiceRequest]]]:
    received: list[ExportLogsServiceRequest] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            if self.path == "/v1/logs" and self.headers.get("authorization") == "Bearer t0k":
                received.append(ExportLogsServiceRequest.FromString(body))
                status, payload = 200, ExportLogsServiceResponse().SerializeToString()
            else:
                status, payload = 401, b""
            self.send_response(status)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


def last_root_span() -> tuple[str, str]:
    spans = [s for r in json.loads(CAPTURE.read_text())["resourceSpans"]
             for scope in r["scopeSpans"] for s in scope["spans"]]
    roots = sorted((s for s in spans if not s.get("parentSpanId")),
                   key=lambda s: int(s["startTimeUnixNano"]))
    return roots[-1]["traceId"], roots[-1]["spanId"]


def test_verdicts_reach_an_otlp_endpoint_parented_to_the_turn(database_url: str) -> None:
    with logs_receiver() as (endpoint, received):
        env = {**IN_SERVER, "TOOLTRAIL_EXPORT_OTLP_ENDPOINT": endpoint,
               "TOOLTRAIL_EXPORT_OTLP_HEADERS": "authorization=Bearer t0k"}
        with running_server(database_url, env=env) as server, server.client() as client:
            assert client.post("/api/v1/expectations", json=WEATHER).status_code == 201
            response = client.post("/v1/traces", json=json.loads(CAPTURE.read_text()))
            assert response.status_code == 200
            (result,) = server.wait_for("/api/v1/results", lambda b: len(b["data"]) == 1)["data"]
            deadline = time.monotonic() + 15
            while not received and time.monotonic() < deadline:
                time.sleep(0.1)
            records = [r for req in received for rl in req.resource_logs
                       for sl in rl.scope_logs for r in sl.log_records]
            assert len(records) == 1, records
            (record,) = records
            trace_id, span_id = last_root_span()
            assert record.event_name == "gen_ai.evaluation.result"
            assert (record.trace_id.hex(), record.span_id.hex()) == (trace_id, span_id)
            attributes = {a.key: a.value for a in record.attributes}
            assert attributes["gen_ai.evaluation.name"].string_value == "weather"
            assert attributes["gen_ai.evaluation.score.value"].double_value == result["score"]
            label = "pass" if result["passed"] else "fail"
            assert attributes["gen_ai.evaluation.score.label"].string_value == label
            assert attributes["tooltrail.evaluation.passed"].bool_value == result["passed"]
            assert attributes["gen_ai.evaluation.explanation"].string_value == result["reason"]
            assert attributes["gen_ai.conversation.id"].string_value == "conv-pydantic-ai-0001"
            metrics = client.get("/metrics").text
            assert 'tooltrail_evaluation_export_records_total{outcome="exported"} 1.0' in metrics


def test_an_unreachable_endpoint_is_counted_and_scoring_goes_on(database_url: str) -> None:
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**IN_SERVER, "TOOLTRAIL_EXPORT_OTLP_ENDPOINT": f"http://127.0.0.1:{port}"}
    with running_server(database_url, env=env) as server, server.client() as client:
        assert client.post("/api/v1/expectations", json=WEATHER).status_code == 201
        assert client.post("/v1/traces", json=json.loads(CAPTURE.read_text())).status_code == 200
        server.wait_for("/api/v1/results", lambda b: len(b["data"]) == 1)
        server.wait_for("/api/v1/signals", lambda b: len(b["versions"]) == 1)
        deadline = time.monotonic() + 30
        text = ""
        while time.monotonic() < deadline:
            text = client.get("/metrics").text
            if 'tooltrail_evaluation_export_records_total{outcome="failed"} 1.0' in text:
                break
            time.sleep(0.2)
        assert 'tooltrail_evaluation_export_records_total{outcome="failed"} 1.0' in text
