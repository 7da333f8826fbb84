"""Projects (collector.projects) on both stores: conversation keys and expectations are scoped
by project, the REST routes take ?project=, and data stored before migrates into the default
project."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import func, select

from tests.collector.suites.checkutil import run, run_json, verdicts
from tests.server import Server, running_server
from tests.spans import ToolStep, agent_turn, to_request
from tooltrail.collector import conversation_view
from tooltrail.collector.capture.explicit import explicit_batch
from tooltrail.collector.extract import ExtractOptions, extract
from tooltrail.collector.store.db import alembic_config, make_engine, migrate
from tooltrail.collector.store.persist import write_batches
from tooltrail.collector.store.tables import (
    conversations,
    expectations,
    signal_buckets,
    tool_calls,
    turns,
)


def spans_of(project: str | None, service: str, key: str, tools: list[ToolStep]) -> bytes:
    """One agent turn of conversation `key` from `service`, its resource naming `project`."""
    exporter = InMemorySpanExporter()
    attributes = {"service.name": service}
    if project is not None:
        attributes["tooltrail.project"] = project
    tp = TracerProvider(resource=Resource.create(attributes))
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    agent_turn(tp, key, tools)
    tp.shutdown()
    return bytes(to_request(exporter.get_finished_spans()).SerializeToString())


def rows(url: str) -> list[tuple[str, str, str | None, int]]:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            c = conversations.c
            return [tuple(r) for r in conn.execute(  # type: ignore[misc]
                select(c.project, c.key, c.service, c.call_count).order_by(c.project, c.key))]
    finally:
        engine.dispose()


def test_one_key_in_two_projects_is_two_conversations_in_the_writer(database_url: str) -> None:
    """Extraction takes the project from the resource (else ExtractOptions.project, the
    configured default); the writer keeps (project, key) apart, in one group commit too."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    migrate(database_url)
    engine = make_engine(database_url)
    options = ExtractOptions(project="main")
    batches = []
    for project, service in (("alpha", "svc-a"), ("beta", "svc-b"), (None, "svc-c")):
        request = ExportTraceServiceRequest.FromString(
            spans_of(project, service, "session-1", [ToolStep("t", {"p": service})]))
        batches.append(extract(request, options))
    with engine.begin() as conn:
        write_batches(conn, batches, time.time())
    with engine.begin() as conn:  # a resend and one more turn of alpha's: still three
        write_batches(conn, batches[:1], time.time())
        request = ExportTraceServiceRequest.FromString(
            spans_of("alpha", "svc-a", "session-1", [ToolStep("u")]))
        write_batches(conn, [extract(request, options)], time.time())
    engine.dispose()
    assert rows(database_url) == [("alpha", "session-1", "svc-a", 2),
                                  ("beta", "session-1", "svc-b", 1),
                                  ("main", "session-1", "svc-c", 1)]


def test_a_bad_project_name_rejects_the_spans_with_the_rule() -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest.FromString(
        spans_of("no spaces please", "svc", "k", [ToolStep("t")]))
    batch = extract(request)
    assert not batch.calls and not batch.traces
    assert batch.rejected and all("tooltrail.project" in r.reason and "letters, digits"
                                  in r.reason for r in batch.rejected)


def test_migration_0005_moves_stored_data_into_the_default_project(database_url: str) -> None:
    """A database populated at 0004 (an OTLP conversation, an explicit capture, an
    expectation) upgrades into the configured default project; the explicit capture sent
    again afterwards stores nothing new; a second project may then reuse the key."""
    from alembic import command

    config = alembic_config(database_url, "legacy")
    command.upgrade(config, "0004")
    engine = make_engine(database_url)
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    traced = extract(ExportTraceServiceRequest.FromString(
        spans_of(None, "svc", "old-1", [ToolStep("a", {"x": 1})])))
    body = {"calls": [{"id": "c1", "name": "refund", "arguments": {"amount": 5}}]}
    captured = explicit_batch("old-1", 0, body, now_ns=10)
    with engine.begin() as conn:  # the rows 0004's writer made: no project, old turn keys
        ids: dict[str, int] = {}
        for batch, turn_key in ((traced, traced.traces[0].turn_key), (captured, "turn#0:old-1")):
            (info,) = batch.traces
            cid = ids.get(info.conversation_key)
            if cid is None:
                cid = ids[info.conversation_key] = conn.exec_driver_sql(
                    "INSERT INTO conversations (key, service, agents, attributes, first_seen, "
                    "last_seen, start_ns, end_ns, turn_count, call_count, error_count, "
                    "change_seq, scored_seq) VALUES ('old-1', 'svc', '[]', '{}', 0, 0, 0, 0, "
                    "2, 2, 0, 1, 0) RETURNING id").scalar_one()
            tid = conn.exec_driver_sql(
                "INSERT INTO turns (conversation_id, turn_key, trace_id, start_ns, end_ns, "
                "key_rank, has_agent_root, agents) VALUES (?, ?, ?, 0, 0, 2, false, '[]') "
                "RETURNING id" if conn.dialect.name == "sqlite" else
                "INSERT INTO turns (conversation_id, turn_key, trace_id, start_ns, end_ns, "
                "key_rank, has_agent_root, agents) VALUES (%s, %s, %s, 0, 0, 2, false, '[]') "
                "RETURNING id", (cid, turn_key, turn_key)).scalar_one()
            for call in batch.calls:
                conn.execute(tool_calls.insert().values(
                    conversation_id=cid, turn_id=tid, trace_id=turn_key, span_id=call.span_id,
                    name=call.name, status=call.status, start_ns=0, end_ns=0,
                    convention=call.convention, source=call.source, arguments=call.arguments))
        conn.exec_driver_sql(
            "INSERT INTO expectations (slug, version, body, active, created_at) "
            "VALUES ('old-exp', 1, '{\"calls\": []}', true, 0)")
        conn.exec_driver_sql(
            "INSERT INTO signal_buckets (service, version, agent, bucket, turns, zero_turns, "
            "calls, calls_sq, failed, unexecuted, pending, histogram, tools) "
            "VALUES ('svc', '1', '', 0, 1, 0, 1, 1, 0, 0, 0, '{\"1\": 1}', '{\"a\": 1}')")
    command.upgrade(config, "head")
    engine.dispose()
    with engine.connect() as conn:
        assert conn.execute(select(conversations.c.project, conversations.c.key)).all() == [
            ("legacy", "old-1")]
        assert conn.execute(select(expectations.c.project)).scalars().all() == ["legacy"]
        assert conn.execute(select(signal_buckets.c.project, signal_buckets.c.service,
                                   signal_buckets.c.tools)).all() == [("legacy", "svc",
                                                                       {"a": 1})]
        keys = set(conn.execute(select(turns.c.turn_key)).scalars())
        assert keys == {traced.traces[0].turn_key, "turn#0:legacy:old-1"}
        assert set(conn.execute(select(tool_calls.c.trace_id)).scalars()) == keys
    with engine.begin() as conn:  # the same capture again: nothing new
        write_batches(conn, [explicit_batch("old-1", 0, body, 99, project="legacy")],
                      time.time(), conversation_view.counts)
        write_batches(conn, [explicit_batch("old-1", 0, body, 99, project="other")],
                      time.time(), conversation_view.counts)
    with engine.connect() as conn:
        assert conn.execute(
            select(conversations.c.project, func.count()).select_from(conversations)
            .join(tool_calls, tool_calls.c.conversation_id == conversations.c.id)
            .group_by(conversations.c.project).order_by(conversations.c.project)
        ).all() == [("legacy", 2), ("other", 1)]
    with engine.begin() as conn:  # one project again, so that the downgrade may run
        other = select(conversations.c.id).where(conversations.c.project == "other")
        conn.execute(tool_calls.delete().where(tool_calls.c.conversation_id.in_(other)))
        conn.execute(turns.delete().where(turns.c.conversation_id.in_(other)))
        conn.execute(conversations.delete().where(conversations.c.project == "other"))
    engine.dispose()
    command.downgrade(config, "0004")
    with engine.connect() as conn:
        keys = {k for (k,) in conn.exec_driver_sql("SELECT turn_key FROM turns")}
        assert keys == {traced.traces[0].turn_key, "turn#0:old-1"}
    engine.dispose()
    command.upgrade(config, "head")
    engine.dispose()


REFUND = {"id": "{slug}", "match": "superset", "calls": [{"name": "issue_refund"}]}


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url, "--project", "main") as s:
        yield s


def post_spans(server: Server, body: bytes) -> None:
    with server.client() as client:
        answer = client.post("/v1/traces", content=body,
                             headers={"content-type": "application/x-protobuf"})
        assert answer.status_code == 200, answer.text


def results(server: Server, key: str, project: str) -> list[dict[str, Any]]:
    body = server.wait_for(f"/api/v1/conversations/{key}/results",
                           lambda b: b["scoring"] == "scored" and b["data"],
                           params={"project": project})
    return list(body["data"])


def test_two_services_saying_session_1_are_scored_in_their_own_projects(server: Server) -> None:
    """Two services both say `session-1`, under projects alpha and beta: two conversations,
    each scored only against its own project's expectations; REST reads each by ?project=."""
    post_spans(server, spans_of("alpha", "svc-a", "session-1", [ToolStep("issue_refund")]))
    post_spans(server, spans_of("beta", "svc-b", "session-1", [ToolStep("lookup_order")]))
    with server.client() as client:
        for project, slug in (("alpha", "refund-a"), ("beta", "refund-b")):
            created = client.post("/api/v1/expectations", params={"project": project},
                                  json={**REFUND, "id": slug})
            assert created.status_code == 201, created.text
            assert created.json()["selects"]["stored"] == 1  # its project's session-1 only
        clash = client.post("/api/v1/expectations", params={"project": "beta"},
                            json={**REFUND, "id": "refund-a"})
        assert clash.status_code == 409 and "project 'alpha'" in clash.text

        a = client.get("/api/v1/conversations/session-1", params={"project": "alpha"}).json()
        b = client.get("/api/v1/conversations/session-1", params={"project": "beta"}).json()
        assert (a["project"], a["service"]) == ("alpha", "svc-a")
        assert (b["project"], b["service"]) == ("beta", "svc-b")
        assert client.get("/api/v1/conversations/session-1").status_code == 404  # not in main
        listed = client.get("/api/v1/conversations", params={"project": "alpha"}).json()
        assert [(c["key"], c["project"]) for c in listed["data"]] == [("session-1", "alpha")]
        mine = client.get("/api/v1/expectations", params={"project": "beta"}).json()["data"]
        assert [(e["id"], e["project"]) for e in mine] == [("refund-b", "beta")]
        assert client.get("/api/v1/expectations/refund-a",
                          params={"project": "beta"}).status_code == 404
        bad = client.get("/api/v1/conversations", params={"project": "a b"})
        assert bad.status_code == 400 and bad.json()["error"]["details"] == {"field": "project"}

    scored_a = results(server, "session-1", "alpha")
    scored_b = results(server, "session-1", "beta")
    assert [(r["expectation"], r["passed"]) for r in scored_a] == [("refund-a", True)]
    assert [(r["expectation"], r["passed"]) for r in scored_b] == [("refund-b", False)]
    with server.client() as client:
        listed = client.get("/api/v1/results", params={"project": "beta"}).json()["data"]
        assert {r["expectation"] for r in listed} == {"refund-b"}
        for project, service in (("alpha", "svc-a"), ("beta", "svc-b")):  # signals per project
            signals = client.get("/api/v1/signals", params={"project": project}).json()
            assert {(g["project"], g["service"]) for g in signals["versions"]} == {
                (project, service)}


def test_captures_take_the_project_and_delete_removes_one_projects_conversation(
    server: Server,
) -> None:
    body = {"calls": [{"id": "c1", "name": "issue_refund", "arguments": {}}]}
    with server.client() as client:
        for project in ("alpha", "beta", None):
            params = {"project": project} if project else {}
            sent = client.post("/api/v1/conversations/cap-1/turns/0/calls", params=params,
                               json=body)
            assert sent.status_code == 200, sent.text
        refused = client.post("/api/v1/conversations/cap-1/turns/0/calls",
                              params={"project": "no/slash"}, json=body)
        assert refused.status_code == 400
        for project in ("alpha", "beta", "main"):  # main: the server's --project
            found = client.get("/api/v1/conversations/cap-1", params={"project": project})
            assert found.status_code == 200, (project, found.text)
            assert found.json()["call_count"] == 1
        assert client.delete("/api/v1/conversations/cap-1",
                             params={"project": "alpha"}).status_code == 204
        assert client.get("/api/v1/conversations/cap-1",
                          params={"project": "alpha"}).status_code == 404
        assert client.get("/api/v1/conversations/cap-1",
                          params={"project": "beta"}).status_code == 200


def test_the_web_view_takes_the_project_and_shows_it(server: Server) -> None:
    post_spans(server, spans_of("gamma", "svc-g", "ui-1", [ToolStep("issue_refund")]))
    server.wait_for("/api/v1/conversations/ui-1", lambda b: b["call_count"] == 1,
                    params={"project": "gamma"})
    with server.client() as client:
        listed = client.get("/ui/", params={"project": "gamma"}).text
        assert "in project gamma" in listed
        assert 'href="/ui/conversations/ui-1?project=gamma"' in listed
        assert "ui-1" not in client.get("/ui/").text  # the default project (main) has none
        page = client.get("/ui/conversations/ui-1", params={"project": "gamma"})
        assert page.status_code == 200 and "project gamma" in page.text
        assert client.get("/ui/conversations/ui-1").status_code == 404
        bad = client.get("/ui/", params={"project": "a b"})
        assert bad.status_code == 400 and "not a project name" in bad.text


def test_apply_check_and_golden_take_the_project(
    server: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`apply`, `check --server` and `golden --server` name the project in every REST call:
    the suite's expectation lands in it and is checked against its conversations only."""
    suite = tmp_path / "suite.yaml"
    suite.write_text("name: delta-suite\nexpectations:\n  - id: delta-refund\n"
                     "    calls: [{name: issue_refund}]\n")
    post_spans(server, spans_of("delta", "svc-d", "d-1", [ToolStep("issue_refund")]))
    server.wait_for("/api/v1/conversations/d-1", lambda b: b["call_count"] == 1,
                    params={"project": "delta"})
    code, out, err = run(capsys, "apply", str(suite), "--server", server.base_url,
                         "--project", "delta")
    assert code == 0, err
    assert "created delta-refund" in out
    with server.client() as client:
        stored = client.get("/api/v1/expectations/delta-refund",
                            params={"project": "delta"}).json()
        assert stored["project"] == "delta"
    code, document = run_json(capsys, "check", str(suite), "--server", server.base_url,
                              "--project", "delta", "--wait", "20")
    assert code == 0, document
    assert verdicts(document) == {("delta-refund", "d-1"): "pass"}
    code, out, err = run(capsys, "golden", "--server", server.base_url, "--project", "delta",
                         "--conversation", "d-1")
    assert code == 0 and "issue_refund" in out, err
    code, _, err = run(capsys, "golden", "--server", server.base_url, "--conversation", "d-1")
    assert code == 2 and "no conversation 'd-1'" in err  # not in the default project


def test_retention_deletes_the_old_conversation_of_one_project_only(database_url: str) -> None:
    """The same key in two projects: retention judges each conversation by its own last
    activity, so only the stale project's goes (with its turns and calls)."""
    from tooltrail.collector.governance import retention

    migrate(database_url)
    engine = make_engine(database_url)
    body = {"calls": [{"name": "t"}]}
    with engine.begin() as conn:
        write_batches(conn, [explicit_batch("same", 0, body, 1, project="old")], 1_000.0)
        write_batches(conn, [explicit_batch("same", 0, body, 1, project="new")], 9_000.0)
    assert retention.expire(engine, 3_600.0, now=9_500.0) == 1
    engine.dispose()
    assert rows(database_url) == [("new", "same", None, 1)]
    engine = make_engine(database_url)
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(tool_calls)).scalar() == 1
        assert conn.execute(select(func.count()).select_from(turns)).scalar() == 1
    engine.dispose()


def test_openapi_documents_the_project_parameter(server: Server) -> None:
    with server.client() as client:
        spec = client.get("/openapi.json").json()
    scoped = [("/api/v1/conversations", "get"), ("/api/v1/conversations/{key}", "get"),
              ("/api/v1/conversations/{key}", "delete"),
              ("/api/v1/conversations/{key}/results", "get"), ("/api/v1/results", "get"),
              ("/api/v1/expectations", "get"), ("/api/v1/expectations", "post"),
              ("/api/v1/expectations/{slug}", "put"), ("/api/v1/jobs", "post"),
              ("/api/v1/signals", "get"),
              ("/api/v1/conversations/{key}/turns/{index}/calls", "post"),
              ("/api/v1/conversations/{key}/adk-events", "post"), ("/api/v1/a2a/tasks", "post")]
    for path, method in scoped:
        params = {p["name"]: p for p in spec["paths"][path][method].get("parameters", [])}
        assert "project" in params, (path, method)
        assert params["project"]["in"] == "query" and "default" in params["project"][
            "description"]
    summary = spec["components"]["schemas"]["ConversationSummary"]["properties"]
    assert "project" in summary
