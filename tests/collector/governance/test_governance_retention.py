"""Retention and deletion (collector.governance.retention): old conversations and everything
derived from them leave the store in bounded batches while ingest goes on; DELETE removes one
conversation entirely. Both stores."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from sqlalchemy import Engine, func, select

from tests.collector.dbscan import rows_as_text, where_found
from tests.server import Server, running_server
from tests.spans import ToolStep, agent_turn, capture, to_request
from tooltrail.collector.extract import ExtractOptions, extract
from tooltrail.collector.governance import retention
from tooltrail.collector.metrics import Metrics
from tooltrail.collector.store import queries
from tooltrail.collector.store.db import make_engine, migrate
from tooltrail.collector.store.persist import write_batches
from tooltrail.collector.store.tables import conversations, metadata, turns
from tooltrail.collector.worker import Worker

EXPECTATION = {"id": "any-lookup", "selector": {"conversation": "*"}, "match": "superset",
               "calls": [{"name": "lookup_order"}]}


def write(engine: Engine, keys: list[str], now: float) -> None:
    """One request of one turn per key (a real SDK's spans), stored as last seen at `now`."""
    tp, exporter = capture()
    for key in keys:
        agent_turn(tp, key, [ToolStep("lookup_order", {"order_id": key}, {"ok": True})])
    batch = extract(to_request(exporter.get_finished_spans()), ExtractOptions())
    with engine.begin() as conn:
        write_batches(conn, [batch], now)


def ids_of(engine: Engine, prefix: str) -> set[int]:
    with engine.connect() as conn:
        return set(conn.execute(select(conversations.c.id)
                                .where(conversations.c.key.like(f"{prefix}%"))).scalars())


def rows_of(engine: Engine, ids: set[int]) -> dict[str, int]:
    """Rows of each conversation-owned table (turns included) that belong to `ids`."""
    with engine.connect() as conn:
        return {t.name: conn.execute(select(func.count()).select_from(t)
                                     .where(t.c.conversation_id.in_(sorted(ids)))).scalar_one()
                for t in metadata.sorted_tables if "conversation_id" in t.c}


def score_all(engine: Engine) -> None:
    with engine.begin() as conn:
        queries.add_expectation_version(conn, EXPECTATION["id"], EXPECTATION, must_exist=False)
    worker = Worker(engine, Metrics(), settle_seconds=0, poll_seconds=0.1, batch=64,
                    lease_seconds=30)
    deadline = time.monotonic() + 60
    while worker.round() and time.monotonic() < deadline:
        pass


def test_retention_deletes_exactly_the_old_while_ingest_continues(database_url: str) -> None:
    migrate(database_url)
    engine = make_engine(database_url)
    try:
        old_keys = [f"old-{i}" for i in range(60)]
        for start in range(0, len(old_keys), 20):
            write(engine, old_keys[start:start + 20], now=1_000.0)  # long ago
        write(engine, ["kept-0", "kept-1"], now=time.time())
        score_all(engine)
        old = ids_of(engine, "old-")
        before = rows_of(engine, old)
        assert len(old) == 60 and before["results"] >= 60 and before["tool_calls"] == 60, before

        stop, written, failures = threading.Event(), [], []

        def ingest() -> None:  # bounded in count and time
            deadline = time.monotonic() + 30
            for i in range(200):
                if stop.is_set() or time.monotonic() > deadline:
                    return
                try:
                    write(engine, [f"new-{i}"], now=time.time())
                    written.append(f"new-{i}")
                except Exception as exc:  # reported below
                    failures.append(exc)
                    return

        thread = threading.Thread(target=ingest)
        thread.start()
        try:
            while len(written) < 3 and thread.is_alive():
                time.sleep(0.01)
            deleted = retention.expire(engine, 3_600, batch=7, batches=1_000)  # 9 batches
            while len(written) < 6 and thread.is_alive():  # ingest went on throughout
                time.sleep(0.01)
        finally:
            stop.set()
            thread.join()
        assert failures == []
        assert deleted == 60
        assert rows_of(engine, old) == {name: 0 for name in before}
        with engine.connect() as conn:
            left = set(conn.execute(select(conversations.c.key)).scalars())
        assert left == {"kept-0", "kept-1", *written} and len(written) >= 6

        # the worker's own pass: counted on /metrics, nothing left to do the next time
        write(engine, ["old-late"], now=1_000.0)
        metrics = Metrics()
        worker = Worker(engine, metrics, settle_seconds=0, poll_seconds=0.1, batch=8,
                        lease_seconds=30, retention_seconds=3_600)
        worker.expire_conversations()
        assert metrics.deleted_conversations.labels("retention")._value.get() == 1
        assert ids_of(engine, "old-") == set() and ids_of(engine, "kept-") != set()
    finally:
        engine.dispose()


def test_retention_setting_runs_in_the_served_worker(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'retention.db'}"
    with running_server(url, "--retention", "1s") as server:
        tp = provider_for(server)
        agent_turn(tp, "short-lived", [ToolStep("lookup_order", {"order_id": 1}, {})])
        server.wait_for("/api/v1/conversations", lambda b: b["data"] == [], timeout=20)
        deadline = time.monotonic() + 10
        with server.client() as client:
            while time.monotonic() < deadline:
                if deleted_count(client.get("/metrics").text, "retention") >= 1:
                    break
                time.sleep(0.2)
            assert deleted_count(client.get("/metrics").text, "retention") >= 1
    assert any("retention: deleted 1 conversations" in line for line in server.log)


def test_retention_must_be_a_duration(tmp_path: Path) -> None:
    from tooltrail.collector.config import Settings, SettingsError

    assert retention.parse_duration("30d") == 30 * 86400
    assert retention.parse_duration("1.5h") == 5400
    with pytest.raises(SettingsError, match=r"retention 'forever'.*positive duration"):
        Settings.load(retention="forever")


def provider_for(server: Server, key: str | None = None) -> Any:
    from tests.spans import provider

    headers = {"authorization": f"Bearer {key}"} if key else None
    return provider(OTLPSpanExporter(endpoint=f"{server.base_url}/v1/traces", headers=headers))


def deleted_count(metrics_text: str, reason: str) -> float:
    found = re.search(
        rf'^tooltrail_conversations_deleted_total\{{reason="{reason}"\}} (\S+)$',
        metrics_text, re.M)
    return float(found.group(1)) if found else 0.0


KEYS = "ingest:ing-key,read:read-key,admin:admin-key"


@pytest.fixture
def secured(database_url: str) -> Iterator[Server]:
    with running_server(database_url, env={"TOOLTRAIL_API_KEYS": KEYS}) as s:
        yield s


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


def test_delete_removes_every_row_of_the_conversation(
    secured: Server, database_url: str,
) -> None:
    key, other = "privacy-req-9f2", "neighbour-3c1"
    tp = provider_for(secured, "ing-key")
    for conversation in (key, other):
        agent_turn(tp, conversation, [ToolStep("lookup_order", {"order_id": 7}, {"ok": 1})])
        agent_turn(tp, conversation, [ToolStep("issue_refund", {"amount": 5}, "done")])
    with httpx.Client(base_url=secured.base_url, timeout=10,
                      headers=bearer("admin-key")) as admin:
        explicit = admin.post(f"/api/v1/conversations/{key}/turns/2/calls",
                              json={"calls": [{"name": "note", "arguments": {"k": 1}}]})
        assert explicit.status_code == 200, explicit.text
        assert admin.post("/api/v1/expectations", json=EXPECTATION).status_code == 201
        for conversation in (key, other):
            deadline = time.monotonic() + 20
            while not admin.get(f"/api/v1/conversations/{conversation}/results").json()["data"]:
                assert time.monotonic() < deadline, "not scored"
                time.sleep(0.1)
    engine = make_engine(database_url)
    try:
        with engine.connect() as conn:
            cid = conn.execute(select(conversations.c.id)
                               .where(conversations.c.key == key)).scalar_one()
            turn_rows = conn.execute(select(turns.c.id, turns.c.trace_id)
                                     .where(turns.c.conversation_id == cid)).all()
        before = rows_of(engine, {cid})
        assert before["turns"] == 3 and before["tool_calls"] == 3 and before["results"] >= 1
        traces = sorted({trace for _, trace in turn_rows})
        assert where_found(database_url, [key, *traces]) != []  # the scan sees them
        with httpx.Client(base_url=secured.base_url, timeout=10) as client:
            path = f"/api/v1/conversations/{key}"
            assert client.delete(path, headers=bearer("read-key")).status_code == 403
            assert client.delete(path, headers=bearer("ing-key")).status_code == 403
            assert client.delete(path, headers=bearer("admin-key")).status_code == 204
            assert client.delete(path, headers=bearer("admin-key")).status_code == 404
            assert client.get(path, headers=bearer("read-key")).status_code == 404
            assert client.get(f"/api/v1/conversations/{other}",
                              headers=bearer("read-key")).json()["call_count"] == 2
            metrics = client.get("/metrics").text
        assert deleted_count(metrics, "request") == 1
        assert where_found(database_url, [key, *traces]) == []
        turn_ids = {str(tid) for tid, _ in turn_rows}
        for table, rows in rows_as_text(database_url).items():
            for row in rows:
                assert row.get("conversation_id") != str(cid), (table, row)
                assert row.get("turn_id") not in turn_ids, (table, row)
        assert rows_of(engine, {cid}) == {name: 0 for name in before}
    finally:
        engine.dispose()
    assert any(f"deleted conversation '{key}'" in line for line in secured.log)


@pytest.mark.parametrize("deleted_after", ["conversations", "turns"])
def test_a_write_racing_a_delete_is_retried_and_leaves_no_orphans(
    pg_url: str, deleted_after: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PostgreSQL writers read conversations and turns without locks: a deletion committed
    right after the writer's lookup must make the write retryable (never a permanent refusal
    of a valid span, never tool calls without their conversation), and the retry stores it."""
    from tooltrail.collector.store import persist
    from tooltrail.collector.store.tables import tool_calls
    from tooltrail.collector.store.writer import StoreUnavailable, classify

    migrate(pg_url)
    engine, deleter = make_engine(pg_url), make_engine(pg_url)
    try:
        tp, exporter = capture()
        agent_turn(tp, "racing", [ToolStep("lookup_order", {"order_id": 1}, {}),
                                  ToolStep("issue_refund", {"amount": 2}, "ok")])
        chat, first, second, root = exporter.get_finished_spans()
        if deleted_after == "conversations":  # the second write adds a new turn
            agent_turn(tp, "racing", [ToolStep("lookup_order", {"order_id": 3}, {})])
            later = exporter.get_finished_spans()[4:]
        else:  # the second write adds a call to the stored turn
            later = (second,)
        with engine.begin() as conn:
            write_batches(conn, [extract(to_request([chat, first, root]), ExtractOptions())],
                          time.time())
        batch = extract(to_request(later), ExtractOptions())
        real_lookup = persist.lookup

        def lookup_then_delete(conn: Any, table: str, *args: Any) -> list[Any]:
            found = real_lookup(conn, table, *args)
            if table == deleted_after and found:
                with deleter.begin() as other:
                    assert retention.delete_by_key(other, "racing")
            return found

        monkeypatch.setattr(persist, "lookup", lookup_then_delete)
        with pytest.raises(Exception) as raised, engine.begin() as conn:
            write_batches(conn, [batch], time.time())
        assert isinstance(classify(raised.value), StoreUnavailable), raised.value
        monkeypatch.setattr(persist, "lookup", real_lookup)
        with engine.begin() as conn:  # the retry
            write_batches(conn, [batch], time.time())
        with engine.connect() as conn:
            live = set(conn.execute(select(conversations.c.id)).scalars())
            owners = set(conn.execute(select(tool_calls.c.conversation_id)).scalars())
            names = conn.execute(select(tool_calls.c.name)).scalars().all()
        assert owners <= live and len(live) == 1
        assert sorted(names) == (["lookup_order"] if deleted_after == "conversations"
                                 else ["issue_refund"])
    finally:
        engine.dispose()
        deleter.dispose()
