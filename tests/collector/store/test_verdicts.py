"""Old verdicts stop counting (issue 11 item 17): once an expectation is replaced (PUT, a
new version) or deactivated (DELETE), its earlier results leave every read that counts —
conversation results, /api/v1/results, the conversations list's passed/expectation filters,
summaries and the /metrics gauges — at once, while ?all=true still shows them. A real server
on SQLite and PostgreSQL, fed by the SDK's OTLP/HTTP exporter."""

from __future__ import annotations

from typing import Any

import httpx
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from tests.server import Server, running_server
from tests.spans import ToolStep, agent_turn, provider

FLOW = {"id": "flow", "selector": {"conversation": "v-*"}, "match": "superset",
        "calls": [{"name": "lookup"}, {"name": "refund"}]}
NARROW = {**FLOW, "selector": {"conversation": "v-b"}}  # version 2 leaves v-a out
NOTIFY = {"id": "notify", "calls": [{"name": "notify"}]}  # no selector: every conversation


def keys(client: httpx.Client, **params: Any) -> list[str]:
    page = client.get("/api/v1/conversations", params=params).json()
    return sorted(c["key"] for c in page["data"])


def verdicts(client: httpx.Client, key: str, **params: Any) -> list[tuple[str, int, bool]]:
    page = client.get(f"/api/v1/conversations/{key}/results", params=params).json()
    return sorted((r["expectation"], r["expectation_version"], r["current"])
                  for r in page["data"])


def scored(server: Server, expectation: str, count: int, version: int = 1) -> None:
    server.wait_for("/api/v1/results", lambda b: len(
        [r for r in b["data"] if r["expectation_version"] == version]) == count,
        params={"expectation": expectation})


def test_replaced_and_deactivated_expectations_stop_counting(database_url: str) -> None:
    with running_server(database_url) as server, server.client() as client:
        tp = provider(OTLPSpanExporter(endpoint=f"{server.base_url}/v1/traces"))
        agent_turn(tp, "v-a", [ToolStep("lookup", {"id": 1})])
        agent_turn(tp, "v-b", [ToolStep("lookup", {"id": 2}), ToolStep("refund")])
        tp.shutdown()
        assert client.post("/api/v1/expectations", json=FLOW).status_code == 201
        assert client.post("/api/v1/expectations", json=NOTIFY).status_code == 201
        scored(server, "flow", 2)
        scored(server, "notify", 2)
        assert keys(client, passed="false") == ["v-a", "v-b"]  # notify fails both
        assert keys(client, expectation="flow") == ["v-a", "v-b"]

        # DELETE: notify's verdicts stop counting at once, everywhere
        assert client.delete("/api/v1/expectations/notify").status_code == 204
        assert keys(client, passed="false") == ["v-a"]
        assert keys(client, expectation="notify") == []
        assert client.get("/api/v1/results", params={"expectation": "notify"}).json()[
            "data"] == []
        assert client.get("/api/v1/expectations/notify/summary").json()["count"] == 0
        metrics = client.get("/metrics").text
        assert 'expectation="notify"' not in metrics
        assert 'tooltrail_expectation_pass_ratio{expectation="flow"} 0.5' in metrics
        assert verdicts(client, "v-a") == [("flow", 1, True)]
        assert verdicts(client, "v-a", all="true") == [("flow", 1, True), ("notify", 1, False)]
        history = client.get("/api/v1/results", params={"expectation": "notify", "all": "true"})
        assert [r["current"] for r in history.json()["data"]] == [False, False]

        # PUT: version 1's verdicts stop counting before any rescoring; v-a is not selected
        # by version 2, so nothing replaces its failed verdict
        assert client.put("/api/v1/expectations/flow", json=NARROW).json()["version"] == 2
        assert keys(client, passed="false") == []
        assert verdicts(client, "v-a") == []
        assert verdicts(client, "v-a", all="true") == [("flow", 1, False), ("notify", 1, False)]
        scored(server, "flow", 1, version=2)
        assert keys(client, expectation="flow") == ["v-b"]
        assert keys(client, passed="true") == ["v-b"]
        assert verdicts(client, "v-b") == [("flow", 2, True)]
        summary = client.get("/api/v1/expectations/flow/summary").json()
        assert (summary["count"], summary["passed"]) == (1, 1)
        old = client.get("/api/v1/expectations/flow/summary", params={"version": 1}).json()
        assert old["count"] == 0
        current = client.get("/api/v1/results", params={"expectation": "flow"}).json()["data"]
        assert [(r["conversation"], r["expectation_version"]) for r in current] == [("v-b", 2)]
        assert 'tooltrail_expectation_pass_ratio{expectation="flow"} 1.0' in client.get(
            "/metrics").text

        # a rescoring job over every active expectation changes none of this
        job = client.post("/api/v1/jobs", json={}).json()["id"]
        server.wait_for(f"/api/v1/jobs/{job}", lambda b: b["status"] == "done")
        assert keys(client, passed="false") == []
        assert verdicts(client, "v-a") == []
