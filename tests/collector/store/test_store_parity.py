"""Both stores hold the same conversations after the same writes. PostgreSQL inserts with
RETURNING and recounts touched conversations in one SQL statement; SQLite takes the generic
path: any difference in counts, times, agents, attributes or keys shows up here."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import Engine, select

from tests.conftest import drop_postgres_database, fresh_database, new_postgres_database
from tests.spans import ToolStep, agent_turn, provider, to_request
from tooltrail.collector.extract import extract
from tooltrail.collector.store.db import make_engine, migrate
from tooltrail.collector.store.persist import PreparedBatch, prepare, write_prepared
from tooltrail.collector.store.tables import conversations, tool_calls, turns

AGENTS = ("support", "billing", "Ärger", "zeta", "Alpha")


def scenario(seed: int) -> list[list[PreparedBatch]]:
    """Groups of batches: turns of several conversations and agents, tool errors, tool spans
    sent before their root (re-keyed when it arrives), resent spans, conversations spread over
    groups."""
    rng = random.Random(seed)
    spans: list[ReadableSpan] = []
    for service in ("support-agent", "billing-agent"):
        exporter = InMemorySpanExporter()
        tp = provider(exporter, service=service)
        for _ in range(rng.randint(3, 8)):
            conv = f"conv-{rng.randint(0, 5)}" if rng.random() < 0.9 else None
            tools = [ToolStep(rng.choice("abc"), {"i": rng.randint(0, 9)}, {"ok": True},
                              raises="boom" if rng.random() < 0.2 else None)
                     for _ in range(rng.randint(0, 3))]
            agent_turn(tp, conv, tools, agent=rng.choice(AGENTS))
        spans += exporter.get_finished_spans()
    rng.shuffle(spans)
    groups: list[list[PreparedBatch]] = []
    start = 0
    while start < len(spans):
        group = []
        for _ in range(rng.randint(1, 3)):
            size = rng.randint(1, 8)
            part = spans[start:start + size]
            if rng.random() < 0.2 and start:
                part = part + spans[max(0, start - 3):start]  # a resend of spans already stored
            start += size
            if part:
                group.append(prepare(extract(to_request(part))))
        groups.append(group)
    return groups


def snapshot(engine: Engine) -> dict[str, Any]:
    with engine.connect() as conn:
        keys = dict(conn.execute(select(conversations.c.id, conversations.c.key)).all())
        convs = sorted(
            (r.key, r.service, r.agents, r.attributes, r.turn_count, r.call_count,
             r.error_count, r.start_ns, r.end_ns, r.change_seq, r.first_seen, r.last_seen)
            for r in conn.execute(select(conversations))
        )
        turn_rows = sorted(
            (r.turn_key, keys[r.conversation_id], r.start_ns, r.end_ns, r.key_rank,
             r.has_agent_root, r.agents)
            for r in conn.execute(select(turns))
        )
        calls = sorted(
            (r.trace_id, r.span_id, keys[r.conversation_id], r.name, r.status, r.executed)
            for r in conn.execute(select(tool_calls))
        )
    return {"conversations": convs, "turns": turn_rows, "calls": calls}


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[Engine, Engine]]:
    database = contextmanager(fresh_database)
    with database("sqlite", tmp_path) as lite, database("postgres", tmp_path) as pg:
        migrate(lite)
        migrate(pg)
        engines = make_engine(lite), make_engine(pg)
        try:
            yield engines
        finally:
            for engine in engines:
                engine.dispose()


@pytest.mark.postgres
@pytest.mark.parametrize("seed", range(6))
def test_sqlite_and_postgresql_store_the_same(stores: tuple[Engine, Engine], seed: int) -> None:
    groups = scenario(seed)
    for i, group in enumerate(groups):
        now = 1_700_000_000.0 + i
        for engine in stores:
            with engine.begin() as conn:
                write_prepared(conn, group, now)
    lite, pg = (snapshot(engine) for engine in stores)
    assert lite["calls"], "the scenario stored no call"
    assert any(c[2] for c in lite["conversations"]), "no conversation has agents"
    assert lite == pg


@pytest.fixture
def icu_postgres() -> Iterator[str]:
    """A PostgreSQL database whose default collation is ICU English (Ä sorts next to A), so
    that only an explicit code-point order sorts agents as Python does."""
    url = new_postgres_database(
        "TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en' LOCALE 'C.UTF-8'")
    try:
        yield url
    finally:
        drop_postgres_database(url)


@pytest.mark.postgres
def test_postgresql_recount_sorts_agents_by_code_point(
    stores: tuple[Engine, Engine], icu_postgres: str
) -> None:
    exporter = InMemorySpanExporter()
    tp = provider(exporter)
    for agent in AGENTS:
        agent_turn(tp, "conv-agents", [ToolStep("a")], agent=agent)
    batch = prepare(extract(to_request(exporter.get_finished_spans())))
    migrate(icu_postgres)
    icu = make_engine(icu_postgres)
    try:
        for engine in (*stores, icu):
            with engine.begin() as conn:
                write_prepared(conn, [batch], time.time())
            with engine.connect() as conn:
                agents = conn.execute(select(conversations.c.agents)).scalar_one()
            assert agents == sorted(AGENTS)
    finally:
        icu.dispose()
