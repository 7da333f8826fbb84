"""API keys on both transports: no key, wrong key, a key of the wrong role."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import httpx
import pytest
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpExporter,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.server import Server, running_server
from tests.spans import ToolStep, agent_turn, capture, to_request
from tooltrail.collector.apikeys import ApiKeys, Forbidden, Unauthenticated
from tooltrail.collector.cli import exposure_warning
from tooltrail.collector.config import Settings

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
KEYS = "ingest:ingest-key,read:read-key,admin:admin-key"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    url = f"sqlite:///{tmp_path_factory.mktemp('auth') / 'db.sqlite'}"
    with running_server(url, env={"TOOLTRAIL_API_KEYS": KEYS}) as s:
        yield s


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


def spans() -> bytes:
    tp, exporter = capture()
    agent_turn(tp, "auth-conv", [ToolStep("search", {}, 1)])
    return to_request(exporter.get_finished_spans()).SerializeToString()


def grpc_status(server: Server, metadata: tuple[tuple[str, str], ...]) -> grpc.StatusCode:
    with grpc.insecure_channel(server.grpc_endpoint) as channel:
        call = channel.unary_unary(EXPORT, request_serializer=None,
                                   response_deserializer=ExportTraceServiceResponse.FromString)
        try:
            call(spans(), metadata=metadata, timeout=10)
        except grpc.RpcError as err:
            return err.code()  # type: ignore[no-any-return]
        return grpc.StatusCode.OK


def test_grpc_ingest_needs_an_ingest_key(server: Server) -> None:
    assert grpc_status(server, ()) == grpc.StatusCode.UNAUTHENTICATED
    assert grpc_status(server, (("authorization", "Bearer nope"),)) == \
        grpc.StatusCode.UNAUTHENTICATED
    assert grpc_status(server, (("authorization", "Bearer read-key"),)) == \
        grpc.StatusCode.PERMISSION_DENIED
    assert grpc_status(server, (("authorization", "Bearer ingest-key"),)) == grpc.StatusCode.OK
    tp, exporter = capture()
    agent_turn(tp, "auth-sdk", [ToolStep("x", {}, 1)])
    sdk = GrpcExporter(endpoint=server.grpc_endpoint, insecure=True,
                       headers={"authorization": "Bearer admin-key"})
    assert sdk.export(exporter.get_finished_spans()) == SpanExportResult.SUCCESS
    sdk.shutdown()


def test_http_ingest_needs_an_ingest_key(server: Server) -> None:
    url = f"{server.base_url}/v1/traces"
    pb = {"content-type": "application/x-protobuf"}
    for headers, status in (({}, 401), (bearer("wrong"), 401), (bearer("read-key"), 403),
                            (bearer("ingest-key"), 200)):
        response = httpx.post(url, content=spans(), headers={**pb, **headers})
        assert response.status_code == status, headers
        if status != 200:
            assert status_pb2.Status.FromString(response.content).message
    sdk = HttpExporter(endpoint=url, headers=bearer("ingest-key"))
    tp, exporter = capture()
    agent_turn(tp, "auth-sdk-http", [ToolStep("x", {}, 1)])
    assert sdk.export(exporter.get_finished_spans()) == SpanExportResult.SUCCESS
    sdk.shutdown()


def test_rest_roles(server: Server) -> None:
    base = server.base_url
    expectation = {"id": "auth-exp", "calls": [{"name": "search"}]}
    assert httpx.get(f"{base}/api/v1/conversations").status_code == 401
    wrong = httpx.get(f"{base}/api/v1/conversations", headers=bearer("wrong"))
    assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "unauthenticated"
    ingest_only = httpx.get(f"{base}/api/v1/expectations", headers=bearer("ingest-key"))
    assert ingest_only.status_code == 403 and ingest_only.json()["error"]["code"] == "forbidden"
    assert httpx.post(f"{base}/api/v1/expectations", json=expectation,
                      headers=bearer("ingest-key")).status_code == 403
    assert httpx.post(f"{base}/api/v1/expectations", json=expectation,
                      headers=bearer("read-key")).status_code == 403
    assert httpx.get(f"{base}/api/v1/conversations",
                     headers=bearer("read-key")).status_code == 200
    assert httpx.post(f"{base}/api/v1/score", headers=bearer("read-key"), json={
        "expectation": {"calls": []}, "calls": []}).status_code == 200
    assert httpx.post(f"{base}/api/v1/expectations", json=expectation,
                      headers=bearer("admin-key")).status_code == 201
    assert httpx.get(f"{base}/healthz").status_code == 200  # probes stay open


def test_key_parsing_and_constant_time_check() -> None:
    keys = ApiKeys.parse(["ingest:a", "b", "read:c", "# comment", ""])
    keys.check("Bearer b", "write")
    keys.check("bearer a", "ingest")
    with pytest.raises(Forbidden):
        keys.check("Bearer a", "read")
    with pytest.raises(Unauthenticated):
        keys.check("Basic b", "read")
    with pytest.raises(Unauthenticated):
        keys.check(None, "read")
    ApiKeys.parse([]).check(None, "write")  # no keys configured: open


def test_loud_warning_off_loopback_without_keys() -> None:
    assert exposure_warning(Settings(host="127.0.0.1")) is None
    assert exposure_warning(Settings(host="::1")) is None
    assert "NO API keys" in (exposure_warning(Settings(host="0.0.0.0")) or "")
    assert exposure_warning(Settings(host="0.0.0.0", api_keys=["k"])) is None
