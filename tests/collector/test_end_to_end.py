"""From an agent's OTLP export to a scored verdict over REST, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpExporter,
)

from tests.server import Server, running_server
from tests.spans import ToolStep, agent_turn, provider

REFUND = {
    "id": "refund-flow",
    "selector": {"conversation": "e2e-*"},
    "match": "superset",
    "calls": [
        {"name": "lookup_order", "arguments": {"order_id": 42}},
        {"name": "issue_refund"},
    ],
}


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url) as s:
        yield s


def exporters(server: Server) -> tuple[Any, Any]:
    """Two providers: one exporting over OTLP/gRPC, one over OTLP/HTTP (each span as it ends,
    so tool spans reach the server before their root)."""
    grpc_tp = provider(GrpcExporter(endpoint=server.grpc_endpoint, insecure=True))
    http_tp = provider(HttpExporter(endpoint=f"{server.base_url}/v1/traces"))
    return grpc_tp, http_tp


def current(server: Server, key: str, version: int = 1) -> dict[str, Any]:
    body = server.wait_for(
        f"/api/v1/conversations/{key}/results",
        lambda b: any(r["expectation_version"] == version for r in b["data"]),
    )
    (result,) = [r for r in body["data"] if r["expectation"] == "refund-flow"]
    return dict(result)


def test_scored_end_to_end(server: Server) -> None:
    grpc_tp, http_tp = exporters(server)
    # stored before the expectation exists: scored by the expectation's rescoring job
    agent_turn(grpc_tp, "e2e-good", [ToolStep("lookup_order", {"order_id": 42}, {"late": True})])
    agent_turn(http_tp, "e2e-good", [ToolStep("issue_refund", {"amount": 19.99}, "refunded")])
    agent_turn(grpc_tp, "e2e-silent", [], answer="Your refund is on its way!")
    with server.client() as client:
        created = client.post("/api/v1/expectations", json=REFUND)
        assert created.status_code == 201, created.text
        assert created.json()["id"] == "refund-flow" and created.json()["version"] == 1
        assert created.json()["selects"]["selector"] == {"conversation": "e2e-*"}

        good = client.get("/api/v1/conversations/e2e-good").json()
        assert [t["index"] for t in good["turns"]] == [0, 1]
        assert [[c["name"] for c in t["tool_calls"]] for t in good["turns"]] == [
            ["lookup_order"], ["issue_refund"]]
        assert good["turns"][0]["tool_calls"][0]["arguments"] == {"order_id": 42}
        silent = client.get("/api/v1/conversations/e2e-silent").json()
        assert silent["turn_count"] == 1 and silent["call_count"] == 0

    assert current(server, "e2e-good")["passed"] is True
    result = current(server, "e2e-silent")
    assert result["passed"] is False and result["recall"] == 0.0
    assert result["reason"] == "Expected `lookup_order`; it was never called."

    # arrives after the expectation: scored once it settles, rescored when more spans come
    agent_turn(http_tp, "e2e-late", [ToolStep("lookup_order", {"order_id": 42}, {})])
    partial = current(server, "e2e-late")
    assert partial["passed"] is False and partial["recall"] == 0.5
    agent_turn(grpc_tp, "e2e-late", [ToolStep("issue_refund", {"amount": 1}, "refunded")])
    server.wait_for("/api/v1/conversations/e2e-late/results",
                    lambda b: b["data"] and b["data"][0]["passed"])
    with server.client() as client:
        history = client.get("/api/v1/conversations/e2e-late/results",
                             params={"all": "true"}).json()["data"]
    assert [r["passed"] for r in history] == [True, False]
    grpc_tp.shutdown()
    http_tp.shutdown()


def test_new_version_rescores(server: Server) -> None:
    grpc_tp, _ = exporters(server)
    agent_turn(grpc_tp, "e2e-v2", [ToolStep("lookup_order", {"order_id": 7}, {})])
    with server.client() as client:
        if client.get("/api/v1/expectations/refund-flow").status_code == 404:
            assert client.post("/api/v1/expectations", json=REFUND).status_code == 201
        v1 = client.get("/api/v1/expectations/refund-flow").json()["version"]
        server.wait_for("/api/v1/conversations/e2e-v2/results", lambda b: b["data"])
        relaxed = {**REFUND, "calls": [{"name": "lookup_order"}]}
        answer = client.put("/api/v1/expectations/refund-flow", json=relaxed)
        assert answer.status_code == 200 and answer.json()["version"] == v1 + 1
    result = current(server, "e2e-v2", version=v1 + 1)
    assert result["passed"] is True
    with server.client() as client:
        old = client.get("/api/v1/expectations/refund-flow", params={"version": v1}).json()
    assert old["expectation"]["calls"][1]["name"] == "issue_refund"
    grpc_tp.shutdown()
