"""GET /api/v1/jobs: the list of rescoring jobs, cursor-paginated, filtered by status, in
OpenAPI — against a real server on both stores."""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from tests.server import running_server
from tests.spans import ToolStep, agent_turn, provider

FLOW = {"id": "flow", "selector": {"conversation": "jobs-*"}, "calls": [{"name": "lookup"}]}


def test_list_jobs_paginated_and_filtered(database_url: str) -> None:
    # no worker: jobs over stored conversations stay queued, so their states are ours to set
    with running_server(database_url, "--no-worker") as server, server.client() as client:
        tp = provider(OTLPSpanExporter(endpoint=f"{server.base_url}/v1/traces"))
        agent_turn(tp, "jobs-a", [ToolStep("lookup", {"id": 1}, 1)])
        tp.shutdown()
        assert client.post("/api/v1/expectations", json=FLOW).status_code == 201
        first = client.get("/api/v1/jobs", params={"status": "queued"}).json()["data"]
        registered = [j["id"] for j in first]  # registering scores stored conversations
        assert len(registered) == 1
        ids = [client.post("/api/v1/jobs", json={}).json()["id"] for _ in range(3)]
        empty = client.post("/api/v1/jobs", json={"since": "2200-01-01T00:00:00Z"}).json()["id"]
        assert client.delete(f"/api/v1/jobs/{ids[1]}").json()["status"] == "cancelled"

        listed = client.get("/api/v1/jobs")
        assert listed.status_code == 200, listed.text
        body = listed.json()
        every = [empty, ids[2], ids[1], ids[0], *registered]
        assert [j["id"] for j in body["data"]] == every  # newest first
        assert body["next_cursor"] is None
        assert body["data"][0]["status"] == "done" and body["data"][0]["total"] == 0
        assert body["data"][3]["expectations"] == [{"id": "flow", "version": 1}]

        seen, cursor, pages = [], None, 0
        while pages < 10:
            params = {"limit": 3} | ({"cursor": cursor} if cursor else {})
            chunk = client.get("/api/v1/jobs", params=params).json()
            seen += [j["id"] for j in chunk["data"]]
            pages += 1
            cursor = chunk["next_cursor"]
            if cursor is None:
                break
        assert (seen, pages) == (every, 2)

        def of(status: str) -> list[str]:
            answer = client.get("/api/v1/jobs", params={"status": status})
            assert answer.status_code == 200, answer.text
            assert all(j["status"] == status for j in answer.json()["data"])
            return [j["id"] for j in answer.json()["data"]]

        assert of("queued") == [ids[2], ids[0], *registered]
        assert of("cancelled") == [ids[1]]
        assert of("done") == [empty]
        assert of("running") == [] and of("failed") == []
        queued_page = client.get("/api/v1/jobs", params={"status": "queued", "limit": 2}).json()
        rest = client.get("/api/v1/jobs", params={"status": "queued",
                                                  "cursor": queued_page["next_cursor"]}).json()
        assert [j["id"] for j in queued_page["data"]] == [ids[2], ids[0]]
        assert [j["id"] for j in rest["data"]] == registered and rest["next_cursor"] is None

        unknown = client.get("/api/v1/jobs", params={"status": "finished"})
        assert unknown.status_code == 422 and "error" in unknown.json()
        assert client.get("/api/v1/jobs", params={"cursor": "garbage!"}).status_code == 400

        operation = client.get("/openapi.json").json()["paths"]["/api/v1/jobs"]["get"]
        params = {p["name"]: p for p in operation["parameters"]}
        assert set(params) >= {"limit", "cursor", "status"}
        status_schema = params["status"]["schema"]
        enum = next(s["enum"] for s in status_schema.get("anyOf", [status_schema]) if "enum" in s)
        assert set(enum) == {"queued", "running", "done", "failed", "cancelled"}
        page_ref = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        assert page_ref.endswith("/JobPage")
