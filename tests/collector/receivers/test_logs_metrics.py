"""OTLP logs and metrics on both transports, with the SDK's own exporters against a real
server: accepted (what `opentelemetry-instrument` exports by default), validated, counted on
/metrics by signal and transport, dropped; malformed bodies are 400 / INVALID_ARGUMENT."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pytest
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import (
    OTLPLogExporter as GrpcLogExporter,
)
from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
    OTLPMetricExporter as GrpcMetricExporter,
)
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http._log_exporter import (
    OTLPLogExporter as HttpLogExporter,
)
from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
    OTLPMetricExporter as HttpMetricExporter,
)
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import (
    InMemoryLogRecordExporter,
    LogRecordExportResult,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricExportResult, MetricsData
from opentelemetry.sdk.resources import Resource
from prometheus_client.parser import text_string_to_metric_families

from tests.server import Server, running_server
from tests.spans import ToolStep, agent_turn, capture, provider

PB = {"content-type": "application/x-protobuf"}
JSON = {"content-type": "application/json"}
LOGS_EXPORT = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
METRICS_EXPORT = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url, "--max-request-bytes", "200000") as s:
        yield s


def records(server: Server, signal: str, transport: str) -> float:
    """tooltrail_ingest_records_total{signal, transport} as the server reports it."""
    return metric_sum(server, "tooltrail_ingest_records_total",
                      {"signal": signal, "transport": transport})


def metric_sum(server: Server, name: str, labels: dict[str, str]) -> float:
    """The sum of `name`'s samples whose labels include `labels`."""
    text = httpx.get(f"{server.base_url}/metrics").text
    return sum(sample.value for family in text_string_to_metric_families(text)
               for sample in family.samples
               if sample.name == name and labels.items() <= sample.labels.items())


def log_records(count: int) -> list[ReadableLogRecord]:
    """GenAI-event-like log records, emitted inside a span as an instrumented agent does."""
    memory = InMemoryLogRecordExporter()
    logs = LoggerProvider(resource=Resource.create({"service.name": "support-agent"}))
    logs.add_log_record_processor(SimpleLogRecordProcessor(memory))
    logger = logs.get_logger("tests.agent")
    tp, _ = capture()
    with tp.get_tracer("tests.agent").start_as_current_span("invoke_agent support"):
        for i in range(count):
            logger.emit(event_name="gen_ai.client.inference.operation.details",
                        body={"tool": "lookup", "arguments": {"id": i}},
                        attributes={"gen_ai.operation.name": "chat"})
    logs.shutdown()
    finished = list(memory.get_finished_logs())
    assert all(r.log_record.trace_id for r in finished)  # correlated with the agent's span
    return finished


def metrics_data() -> tuple[MetricsData, int]:
    """(metrics an instrumented agent records, how many data points they hold)."""
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader],
                           resource=Resource.create({"service.name": "support-agent"}))
    meter = meters.get_meter("tests.agent")
    tokens = meter.create_histogram("gen_ai.client.token.usage", unit="{token}")
    calls = meter.create_counter("agent.tool.calls")
    for kind in ("input", "output"):
        tokens.record(42, {"gen_ai.token.type": kind})
    calls.add(3, {"tool": "lookup"})
    data = reader.get_metrics_data()
    assert data is not None
    meters.shutdown()
    points = sum(len(m.data.data_points) for rm in data.resource_metrics
                 for sm in rm.scope_metrics for m in sm.metrics)
    return data, points


def test_sdk_log_exporters_grpc_and_http(server: Server) -> None:
    batch = log_records(3)
    before = records(server, "logs", "grpc"), records(server, "logs", "http")
    grpc_exporter = GrpcLogExporter(endpoint=server.grpc_endpoint, insecure=True)
    http_exporter = HttpLogExporter(endpoint=f"{server.base_url}/v1/logs",
                                    compression=Compression.Gzip)
    assert grpc_exporter.export(batch) == LogRecordExportResult.SUCCESS
    assert http_exporter.export(batch) == LogRecordExportResult.SUCCESS
    assert http_exporter.export(batch) == LogRecordExportResult.SUCCESS
    grpc_exporter.shutdown()
    http_exporter.shutdown()
    assert records(server, "logs", "grpc") == before[0] + 3
    assert records(server, "logs", "http") == before[1] + 6


def test_sdk_metric_exporters_grpc_and_http(server: Server) -> None:
    data, points = metrics_data()
    assert points == 3
    before = records(server, "metrics", "grpc"), records(server, "metrics", "http")
    grpc_exporter = GrpcMetricExporter(endpoint=server.grpc_endpoint, insecure=True)
    http_exporter = HttpMetricExporter(endpoint=f"{server.base_url}/v1/metrics")
    assert grpc_exporter.export(data) == MetricExportResult.SUCCESS
    assert http_exporter.export(data) == MetricExportResult.SUCCESS
    grpc_exporter.shutdown()
    http_exporter.shutdown()
    assert records(server, "metrics", "grpc") == before[0] + points
    assert records(server, "metrics", "http") == before[1] + points


def test_traces_are_counted_as_records_too(server: Server) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    before = records(server, "traces", "http")
    tp = provider(OTLPSpanExporter(endpoint=f"{server.base_url}/v1/traces"))
    agent_turn(tp, "lm-trace", [ToolStep("lookup", {"id": 1}, 1)])  # agent, chat, tool spans
    tp.shutdown()
    assert records(server, "traces", "http") == before + 3


def grpc_call(server: Server, method: str, body: bytes, response: type) -> object:
    with grpc.insecure_channel(server.grpc_endpoint) as channel:
        call = channel.unary_unary(method, request_serializer=None,
                                   response_deserializer=response.FromString)
        return call(body, timeout=10)


@pytest.mark.parametrize("signal", ["logs", "metrics"])
def test_malformed_bodies_are_400_and_invalid_argument(server: Server, signal: str) -> None:
    url = f"{server.base_url}/v1/{signal}"
    garbage = httpx.post(url, headers=PB, content=b"\xff\xff\xff")
    assert garbage.status_code == 400
    status = status_pb2.Status.FromString(garbage.content)
    assert status.code == 3 and "not a valid OTLP protobuf" in status.message
    bad_json = httpx.post(url, headers=JSON, content=b"{not json")
    assert bad_json.status_code == 400 and "not valid JSON" in bad_json.json()["message"]
    wrong_shape = httpx.post(url, headers=JSON,
                             content=b'{"resourceLogs": 7, "resourceMetrics": 7}')
    assert wrong_shape.status_code == 400
    assert httpx.post(url, content=b"x", headers={"content-type": "text/plain"}).status_code == 415
    big = httpx.post(url, headers=PB, content=b"\x0a" + b"\x00" * 300_000)
    assert big.status_code == 413
    method, answer = ((LOGS_EXPORT, ExportLogsServiceResponse) if signal == "logs"
                      else (METRICS_EXPORT, ExportMetricsServiceResponse))
    with pytest.raises(grpc.RpcError) as err:
        grpc_call(server, method, b"\xff\xff\xff", answer)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert grpc_call(server, method, b"", answer) == answer()  # empty is a valid request
    empty = httpx.post(url, headers=PB, content=b"")
    assert empty.status_code == 200 and empty.content == b""


def test_otlp_json_logs_with_hex_ids_and_partial_success(server: Server) -> None:
    """OTLP/JSON as the spec's own example writes it (opentelemetry-proto
    examples/logs.json): hex trace and span ids, camelCase fields."""
    def record(trace_id: str, span_id: str) -> dict[str, object]:
        return {"timeUnixNano": "1544712660300000000", "severityNumber": 10,
                "severityText": "Information", "traceId": trace_id, "spanId": span_id,
                "body": {"stringValue": "Example log record"},
                "attributes": [{"key": "string.attribute", "value": {"stringValue": "x"}}]}

    good = record("5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174")
    bad = record("5b8efff798038103", "eee19b7ec3c1b174")  # 8 bytes: not a trace id
    body = {"resourceLogs": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "my.service"}}]},
        "scopeLogs": [{"scope": {"name": "my.library"}, "logRecords": [good, bad]}]}]}
    before = records(server, "logs", "http")
    response = httpx.post(f"{server.base_url}/v1/logs", content=gzip.compress(
        json.dumps(body).encode()), headers={**JSON, "content-encoding": "gzip"})
    assert response.status_code == 200, response.text
    partial = response.json()["partialSuccess"]
    assert partial["rejectedLogRecords"] == "1"
    assert "rejected log records: trace_id must be 16 bytes" in partial["errorMessage"]
    assert records(server, "logs", "http") == before + 2
    errors = httpx.get(f"{server.base_url}/api/v1/ingest/errors").json()["data"]
    assert any(e["kind"] == "rejected_log_record" and e["trace_id"] == "5b8efff798038103"
               for e in errors)

    request = ExportLogsServiceRequest()
    request.resource_logs.add().scope_logs.add().log_records.add(trace_id=b"\x01" * 16,
                                                                 span_id=b"\x02" * 8)
    grpc_answer = grpc_call(server, LOGS_EXPORT, request.SerializeToString(),
                            ExportLogsServiceResponse)
    assert grpc_answer == ExportLogsServiceResponse()


def test_invalid_metric_points_are_rejected_alone(server: Server) -> None:
    request = ExportMetricsServiceRequest()
    metrics = request.resource_metrics.add().scope_metrics.add().metrics
    histogram = metrics.add(name="latency").histogram
    histogram.data_points.add(bucket_counts=[1, 2, 3], explicit_bounds=[1.0, 2.0], count=6)
    histogram.data_points.add(bucket_counts=[1, 2], explicit_bounds=[1.0, 2.0], count=3)
    gauge = metrics.add(name="queue").gauge
    gauge.data_points.add(as_int=4).exemplars.add(as_int=1, trace_id=b"\x01" * 3)
    before = records(server, "metrics", "grpc")
    refused = metric_sum(server, "tooltrail_receiver_refused_spans_total", {})
    answer = grpc_call(server, METRICS_EXPORT, request.SerializeToString(),
                       ExportMetricsServiceResponse)
    assert isinstance(answer, ExportMetricsServiceResponse)
    assert answer.partial_success.rejected_data_points == 2
    assert "histogram has 2 bucket counts for 2 explicit bounds" in (
        answer.partial_success.error_message)
    assert "exemplar trace_id must be 16 bytes" in answer.partial_success.error_message
    assert records(server, "metrics", "grpc") == before + 3
    # data points are not spans
    assert metric_sum(server, "tooltrail_receiver_refused_spans_total", {}) == refused


def test_logs_and_metrics_need_an_ingest_key(tmp_path: Path) -> None:
    keys = "ingest:in-key,read:read-key"
    url = f"sqlite:///{tmp_path / 'keys.db'}"
    with running_server(url, env={"TOOLTRAIL_API_KEYS": keys}) as keyed:
        batch = log_records(1)
        data, _ = metrics_data()
        anonymous = httpx.post(f"{keyed.base_url}/v1/logs", headers=PB, content=b"")
        assert anonymous.status_code == 401
        reader = httpx.post(f"{keyed.base_url}/v1/metrics", content=b"",
                            headers={**PB, "authorization": "Bearer read-key"})
        assert reader.status_code == 403
        ingest = {"authorization": "Bearer in-key"}
        assert GrpcLogExporter(endpoint=keyed.grpc_endpoint, insecure=True).export(
            batch) == LogRecordExportResult.FAILURE
        assert GrpcLogExporter(endpoint=keyed.grpc_endpoint, insecure=True,
                               headers=ingest).export(batch) == LogRecordExportResult.SUCCESS
        assert HttpMetricExporter(endpoint=f"{keyed.base_url}/v1/metrics",
                                  headers=ingest).export(data) == MetricExportResult.SUCCESS
        assert GrpcMetricExporter(endpoint=keyed.grpc_endpoint, insecure=True,
                                  headers=ingest).export(data) == MetricExportResult.SUCCESS
        assert records(keyed, "logs", "grpc") == 1
