"""An expectation says which conversations it selects (issue 11 item 21): the answer to
POST and PUT names the selector in words and how many stored conversations it applies to;
with no selector it says it applies to every conversation. A real server on SQLite and
PostgreSQL."""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from sqlalchemy import create_engine

from tests.server import running_server
from tests.spans import ToolStep, agent_turn, provider
from tooltrail.collector.api.selection import selection
from tooltrail.matcher import parse_expectation


def test_create_and_replace_say_what_they_select(database_url: str) -> None:
    with running_server(database_url) as server, server.client() as client:
        tp = provider(OTLPSpanExporter(endpoint=f"{server.base_url}/v1/traces"))
        for key in ("sel-a", "sel-b", "other"):
            agent_turn(tp, key, [ToolStep("lookup")])
        tp.shutdown()
        server.wait_for("/api/v1/conversations", lambda b: len(b["data"]) == 3)

        created = client.post("/api/v1/expectations", json={"id": "all",
                                                            "calls": [{"name": "lookup"}]})
        assert created.status_code == 201
        assert created.json()["selects"] == {
            "every": True, "selector": {}, "description": "every conversation (no selector)",
            "stored": 3}

        replaced = client.put("/api/v1/expectations/all", json={
            "selector": {"conversation": "sel-*", "agent": "support"},
            "calls": [{"name": "lookup"}]})
        assert replaced.status_code == 200
        assert replaced.json() == {"id": "all", "version": 2, "selects": {
            "every": False, "selector": {"conversation": "sel-*", "agent": "support"},
            "description": "conversations where the key matches 'sel-*' and agent 'support' "
                           "took part",
            "stored": 2}}

        typo = client.put("/api/v1/expectations/all", json={
            "selector": {"service": "support-agent", "attributes": {"eval.case": 7}},
            "calls": [{"name": "lookup"}]})
        assert typo.json()["selects"] == {
            "every": False,
            "selector": {"service": "support-agent", "attributes": {"eval.case": 7}},
            "description": "conversations where the service is 'support-agent' and attribute "
                           "'eval.case' is 7",
            "stored": 0}

    engine = create_engine(database_url)
    try:
        with engine.connect() as conn:  # above the limit a selector's matches go uncounted
            narrow = parse_expectation({"selector": {"conversation": "sel-*"}, "calls": []})
            assert selection(conn, narrow, limit=3).stored == 2
            assert selection(conn, narrow, limit=2).stored is None
            assert selection(conn, parse_expectation({"calls": []}), limit=2).stored == 3
    finally:
        engine.dispose()
