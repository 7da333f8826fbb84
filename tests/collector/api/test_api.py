"""The REST API against a real server: error shape, validation, pagination, filters,
summaries checked against hand-computed micro averages, jobs, stateless scoring."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from tests.server import Server, running_server
from tests.spans import ToolStep, agent_turn, provider

FLOW = {"id": "flow", "selector": {"conversation": "api-*"}, "match": "superset",
        "calls": [{"name": "lookup"}, {"name": "refund"}]}


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url) as s:
        tp = provider(OTLPSpanExporter(endpoint=f"{s.base_url}/v1/traces"))
        agent_turn(tp, "api-a", [ToolStep("lookup", {"id": 1}, 1), ToolStep("refund", {}, 1)])
        agent_turn(tp, "api-b", [ToolStep("lookup", {"id": 2}, 1)])
        agent_turn(tp, "api-c", [ToolStep("search", {}, 1), ToolStep("lookup", {"id": 3}, 1),
                                 ToolStep("refund", {}, 1), ToolStep("notify", {}, 1)])
        agent_turn(tp, "other", [ToolStep("search", {"q": "x"}, raises="boom")])
        tp.shutdown()
        with s.client() as client:
            assert client.post("/api/v1/expectations", json=FLOW).status_code == 201
        s.wait_for("/api/v1/results", lambda b: len(b["data"]) == 3,
                   params={"expectation": "flow"})
        yield s


def get(server: Server, path: str, **params: Any) -> httpx.Response:
    with server.client() as client:
        return client.get(path, params=params)


def test_summary_is_micro_averaged(server: Server) -> None:
    body = get(server, "/api/v1/expectations/flow/summary", bucket="1h").json()
    precision, recall = 5 / 7, 5 / 6  # paired actual 2+1+2 of 2+1+4; expected 2+1+2 of 2+2+2
    assert (body["count"], body["passed"], body["failed"]) == (3, 2, 1)
    assert body["pass_rate"] == pytest.approx(2 / 3)
    assert body["precision"] == pytest.approx(precision)
    assert body["recall"] == pytest.approx(recall)
    assert body["f1"] == pytest.approx(2 * precision * recall / (precision + recall))
    assert body["tools"]["refund"]["recall"] == pytest.approx(2 / 3)
    assert body["tools"]["lookup"]["recall"] == 1.0
    assert body["failure_reasons"] == [
        {"reason": "Expected `refund`; it was never called.", "count": 1}]
    assert body["failure_kinds"] == {"missing": 1}
    (bucket,) = body["buckets"]
    assert bucket["count"] == 3 and bucket["start"].endswith(":00:00Z")
    metrics = get(server, "/metrics").text
    assert 'tooltrail_expectation_pass_ratio{expectation="flow"} 0.6666' in metrics


def test_error_shape_everywhere(server: Server) -> None:
    missing = get(server, "/api/v1/conversations/nope")
    assert missing.status_code == 404
    assert missing.json() == {"error": {"code": "not_found",
                                        "message": "no conversation 'nope' in project 'default'"}}
    with server.client() as client:
        bad = client.post("/api/v1/expectations", json={
            "id": "bad", "calls": [{"name": "a", "arguments": {"n": {"$aprox": 1}}}]})
        assert bad.status_code == 400
        error = bad.json()["error"]
        assert error["code"] == "bad_request"
        assert error["message"].startswith("calls[0].arguments.n: unknown operator $aprox")
        assert error["details"]["path"] == "calls[0].arguments.n"
        assert client.post("/api/v1/expectations", json=FLOW).status_code == 409
        unprocessable = client.post("/api/v1/expectations", content=b"[1,",
                                    headers={"content-type": "application/json"})
        assert unprocessable.status_code == 422 and "error" in unprocessable.json()
        assert client.get("/api/v1/conversations", params={"limit": 0}).status_code == 422
        assert client.get("/api/v1/conversations",
                          params={"cursor": "garbage!"}).status_code == 400
        assert client.get("/api/v1/results", params={"since": "yesterday"}).json() == {
            "error": {"code": "bad_request", "message": "since: not an RFC 3339 time: 'yesterday'"}}


def test_pagination_and_filters(server: Server) -> None:
    first = get(server, "/api/v1/conversations", limit=2).json()
    assert len(first["data"]) == 2 and first["next_cursor"]
    rest = get(server, "/api/v1/conversations", limit=2, cursor=first["next_cursor"]).json()
    keys = [c["key"] for c in first["data"] + rest["data"]]
    assert sorted(keys) == ["api-a", "api-b", "api-c", "other"] and rest["next_cursor"] is None

    def keys_of(**params: Any) -> list[str]:
        return sorted(c["key"] for c in get(server, "/api/v1/conversations", **params)
                      .json()["data"])

    assert keys_of(tool="refund") == ["api-a", "api-c"]
    assert keys_of(has_errors="true") == ["other"]
    assert keys_of(passed="false") == ["api-b"]
    assert keys_of(expectation="flow") == ["api-a", "api-b", "api-c"]
    assert keys_of(agent="support") == ["api-a", "api-b", "api-c", "other"]
    assert keys_of(agent="nobody") == []
    assert keys_of(service="support-agent", until="2000-01-01T00:00:00Z") == []
    failed = get(server, "/api/v1/results", expectation="flow", passed="false").json()["data"]
    assert [r["conversation"] for r in failed] == ["api-b"]


def test_validate_and_stateless_score(server: Server) -> None:
    with server.client() as client:
        ok = client.post("/api/v1/expectations:validate", json={"calls": [{"name": "a"}],
                                                                "match": "Any-Order"})
        assert ok.status_code == 200 and ok.json()["expectation"]["match"] == "unordered"
        scored = client.post("/api/v1/score", json={
            "expectation": {"match": "strict", "calls": [{"name": "a"}, {"name": "b"}]},
            "calls": [{"name": "b", "step": 0}, {"name": "a", "step": 0}],
        })
        assert scored.status_code == 200, scored.text
        assert scored.json()["passed"] is True  # parallel calls reordered within their step
        bad_steps = client.post("/api/v1/score", json={
            "expectation": {"calls": []}, "calls": [{"name": "a", "step": 2},
                                                    {"name": "b", "step": 1}]})
        assert bad_steps.status_code == 400
        assert "steps must not decrease" in bad_steps.json()["error"]["message"]
        text_args = client.post("/api/v1/score", json={
            "expectation": {"calls": [{"name": "a", "arguments": {"n": 1}}]},
            "calls": [{"name": "a", "arguments": '{"n": 1}'}]})  # OpenAI-style JSON text
        assert text_args.json()["passed"] is True
        turns = client.post("/api/v1/score", json={
            "expectation": {"scope": "each_turn", "calls": [{"name": "a"}]},
            "turns": [{"calls": [{"name": "a"}]}, {"calls": []}]})
        body = turns.json()
        assert body["passed"] is False and [r["passed"] for r in body["results"]] == [True, False]


def test_rescoring_job_progress_and_cancel(server: Server) -> None:
    with server.client() as client:
        created = client.post("/api/v1/jobs", json={"expectations": ["flow"],
                                                    "selector": {"conversation": "api-a"}})
        assert created.status_code == 202
        job_id = created.json()["id"]
        done = server.wait_for(f"/api/v1/jobs/{job_id}", lambda b: b["status"] == "done")
        assert done["total"] == 4 and done["done"] == 4 and done["failed"] == 0
        assert done["expectations"][0]["id"] == "flow"
        cancelled = client.delete(f"/api/v1/jobs/{job_id}")
        assert cancelled.json()["status"] == "done"  # finished jobs stay as they are
        unknown = client.post("/api/v1/jobs", json={"expectations": ["nope"]})
        assert unknown.status_code == 400
        bad = client.post("/api/v1/jobs", json={"selector": {"conversaton": "x"}})
        assert bad.status_code == 400 and bad.json()["error"]["details"]["path"].startswith(
            "selector")
        assert client.get("/api/v1/jobs/999999").status_code == 404
