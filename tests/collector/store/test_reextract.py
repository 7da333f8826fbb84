"""Re-extraction (collector.reextract) on both stores: spans stored by an older extractor are
extracted again from the raw span archive; only conversations whose trajectory changed get a
new change_seq, hence new results; the others keep theirs, unscored."""

from __future__ import annotations

import gzip
import time
import zlib
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from sqlalchemy import Engine, func, inspect, select

from tests.spans import ToolStep, agent_turn, capture, to_request
from tooltrail.collector.extract import ExtractOptions, conventions
from tooltrail.collector.ingest import Pipeline, run_pipeline
from tooltrail.collector.metrics import Metrics
from tooltrail.collector.receivers.codec import decode_body
from tooltrail.collector.reextract import create_job
from tooltrail.collector.store import archive, queries
from tooltrail.collector.store.db import make_engine, migrate
from tooltrail.collector.store.persist import write_prepared
from tooltrail.collector.store.rows import prepare
from tooltrail.collector.store.tables import (
    conversations,
    results,
    span_archive,
    span_archive_traces,
    tool_calls,
)
from tooltrail.collector.worker import Worker

PROTOBUF = "application/x-protobuf"


def ingest(engine: Engine, request: Any, *, keep: bool = True) -> None:
    """The service's pipeline (decode, extract, prepare, archive) and the writer's SQL."""
    pipeline = Pipeline(decode=decode_body, prepare=prepare, options=ExtractOptions(),
                        limit=1 << 24, archive=archive.pack if keep else None)
    prepared, _, _ = run_pipeline(pipeline, request.SerializeToString(), PROTOBUF, None)
    with engine.begin() as conn:
        write_prepared(conn, [prepared], time.time())  # type: ignore[list-item]


def settle(worker: Worker) -> None:
    for _ in range(20):  # bounded: each round does a chunk or a batch
        if not worker.round():
            return
    raise AssertionError("the worker did not settle")


def state(engine: Engine, key: str) -> tuple[int, list[str], list[tuple[Any, ...]]]:
    """(change_seq, executed call names, its results as stored) of one conversation."""
    with engine.connect() as conn:
        cid, seq = conn.execute(select(conversations.c.id, conversations.c.change_seq)
                                .where(conversations.c.key == key)).one()
        names = list(conn.execute(select(tool_calls.c.name).where(
            tool_calls.c.conversation_id == cid, tool_calls.c.executed)
            .order_by(tool_calls.c.start_ns)).scalars())
        rows = [tuple(r) for r in conn.execute(
            select(results.c.id, results.c.change_seq, results.c.current, results.c.passed,
                   results.c.scored_at).where(results.c.conversation_id == cid)
            .order_by(results.c.id))]
    return seq, names, rows


def test_a_reextract_job_corrects_changed_conversations_only(
    database_url: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    migrate(database_url)
    engine = make_engine(database_url)
    tp, spans = capture()
    agent_turn(tp, "conv-fixed", [ToolStep("lookup", {"id": 1}, {"ok": True}),
                                  ToolStep("refund", {"id": 1}, "done")])
    same_trace = agent_turn(tp, "conv-same", [])  # no tool call: no extractor sees one
    request = to_request(spans.get_finished_spans())
    with monkeypatch.context() as older:  # an extractor that did not know GenAI tool spans
        older.setattr(conventions, "CONVENTIONS",
                      tuple(c for c in conventions.CONVENTIONS if c.name != "genai"))
        ingest(engine, request)
        ingest(engine, request)  # a resend is archived once
    with engine.begin() as conn:
        queries.add_expectation_version(conn, "refunds", {
            "id": "refunds", "match": "superset", "calls": [{"name": "refund"}]},
            must_exist=False)
    worker = Worker(engine, Metrics(), settle_seconds=0, poll_seconds=1, batch=10,
                    lease_seconds=60)
    settle(worker)
    seq_fixed, names, before_fixed = state(engine, "conv-fixed")
    assert names == [] and [r[3] for r in before_fixed] == [False]
    seq_same, _, before_same = state(engine, "conv-same")
    assert [r[3] for r in before_same] == [False]
    with engine.connect() as conn:
        entries, stored_spans, size = archive.size(conn)
    assert entries == 1 and stored_spans == len(spans.get_finished_spans()) and size > 0

    with engine.begin() as conn:
        create_job(conn, ExtractOptions(), selector=None, since=None, until=None)
    settle(worker)

    seq, names, after = state(engine, "conv-fixed")
    assert names == ["lookup", "refund"] and seq > seq_fixed
    assert [(r[1] > seq_fixed, r[2], r[3]) for r in after[1:]] == [(True, True, True)]
    assert after[0][:1] == before_fixed[0][:1] and not after[0][2]  # the old one superseded
    assert state(engine, "conv-same") == (seq_same, [], before_same)  # not rescored

    with engine.begin() as conn:  # a second job finds nothing to change
        create_job(conn, ExtractOptions(), selector=None, since=None, until=None)
    settle(worker)
    assert state(engine, "conv-fixed") == (seq, names, after)

    from tooltrail.collector.governance.retention import delete_by_key

    same_spans = [s for s in spans.get_finished_spans()
                  if format(s.context.trace_id, "032x") == same_trace]
    with engine.begin() as conn:  # the archive leaves with its conversation, exactly
        assert delete_by_key(conn, "conv-fixed")
        assert archive.size(conn)[:2] == (1, len(same_spans))
        (data,) = conn.execute(select(span_archive.c.data)).scalars()
        assert {s.trace_id.hex() for rs in archive.unpack(data).resource_spans
                for ss in rs.scope_spans for s in ss.spans} == {same_trace}
        assert list(conn.execute(select(span_archive_traces.c.trace_id)).scalars()) == [
            same_trace]
        assert delete_by_key(conn, "conv-same")
        assert archive.size(conn) == (0, 0, 0)
        assert conn.execute(select(func.count()).select_from(span_archive_traces)).scalar() == 0
    engine.dispose()


def test_without_the_archive_nothing_is_kept(database_url: str) -> None:
    migrate(database_url)
    engine = make_engine(database_url)
    tp, spans = capture()
    agent_turn(tp, "conv-off", [ToolStep("a", {}, 1)])
    ingest(engine, to_request(spans.get_finished_spans()), keep=False)
    with engine.connect() as conn:
        assert archive.size(conn) == (0, 0, 0)
        assert conn.execute(select(func.count()).select_from(tool_calls)).scalar() == 1
    engine.dispose()


def test_the_archive_is_refused_with_redaction_rules(tmp_path: Any) -> None:
    from pydantic import ValidationError

    from tooltrail.collector.config import Settings

    assert Settings().archive_enabled
    assert not Settings(redaction_rules=str(tmp_path / "r.yaml")).archive_enabled
    with pytest.raises(ValidationError, match="before redaction"):
        Settings(archive_spans=True, redaction_rules=str(tmp_path / "r.yaml"))


def test_migration_0006_creates_and_drops_the_archive(database_url: str) -> None:
    from alembic import command

    from tooltrail.collector.store.db import alembic_config

    config = alembic_config(database_url)
    command.upgrade(config, "0004")
    engine = make_engine(database_url)
    assert "span_archive" not in inspect(engine).get_table_names()
    command.upgrade(config, "0006")
    engine.dispose()
    assert "span_archive" in inspect(engine).get_table_names()
    command.downgrade(config, "0004")
    engine.dispose()
    assert "span_archive" not in inspect(engine).get_table_names()
    command.upgrade(config, "head")
    engine.dispose()


def test_serve_archives_spans_and_runs_a_reextract_job_over_rest(database_url: str) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    from tests.server import running_server
    from tests.spans import provider

    engine = make_engine(database_url)

    def seq() -> int:
        with engine.connect() as conn:
            return int(conn.execute(select(conversations.c.change_seq)).scalar_one())

    with running_server(database_url) as server, server.client() as client:
        tp = provider(OTLPSpanExporter(endpoint=f"{server.base_url}/v1/traces"))
        agent_turn(tp, "rest-a", [ToolStep("lookup", {"id": 1}, 1)])
        tp.shutdown()  # every span acknowledged, so committed
        before = seq()
        refused = client.post("/api/v1/jobs", json={"kind": "reextract",
                                                    "expectations": ["x"]})
        assert refused.status_code == 400, refused.text
        created = client.post("/api/v1/jobs", json={"kind": "reextract"})
        assert created.status_code == 202, created.text
        job = server.wait_for(f"/api/v1/jobs/{created.json()['id']}",
                              lambda b: b["status"] == "done")
        assert (job["kind"], job["total"], job["done"], job["failed"]) == ("reextract", 1, 1, 0)
        listed = client.get("/api/v1/jobs").json()["data"]
        assert [j["kind"] for j in listed] == ["reextract"]
        assert seq() == before  # the same extractor: nothing changed, nothing to rescore
    with engine.connect() as conn:  # on by default in serve
        # one span a request (SimpleSpanProcessor): a span sent before its trace had a turn
        # is not kept, those from the one that made the turn on are
        assert archive.size(conn)[:2] == (2, 2)
    engine.dispose()


def test_a_whole_protobuf_body_is_archived_as_received_any_other_reserialised() -> None:
    tp, spans = capture()
    agent_turn(tp, "conv-good", [ToolStep("lookup", {"id": 1}, 1)])
    agent_turn(tp, "conv-bad", [ToolStep("BADNAME", {"id": 2}, 2)])
    body = to_request(spans.get_finished_spans()).SerializeToString()
    pipeline = Pipeline(decode=decode_body, prepare=prepare, options=ExtractOptions(),
                        limit=1 << 24, archive=archive.pack)

    def archived(data: bytes, encoding: str | None = None) -> bytes:
        prepared, _, _ = run_pipeline(pipeline, data, PROTOBUF, encoding)
        (entry,) = prepared.archive  # type: ignore[attr-defined]
        return zlib.decompress(entry.data)

    assert archived(body) == body
    assert archive.unpack(zlib.compress(archived(gzip.compress(body), "gzip"))) == (
        ExportTraceServiceRequest.FromString(body))
    # a span refused for invalid UTF-8 is not archived: what is stored parses again
    kept = ExportTraceServiceRequest.FromString(
        archived(body.replace(b"BADNAME", b"BAD\xc3\x28ME")))
    names = [s.name for rs in kept.resource_spans for ss in rs.scope_spans for s in ss.spans]
    assert names and not any("BAD" in n for n in names)
