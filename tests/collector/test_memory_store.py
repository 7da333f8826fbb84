"""`collector.memory_store.MemoryStore` reads what the writer stores: over every capture, the
`bench check` conversations, a trace re-keyed by a later request, a resent request and ADK
events, its facts, trajectory rows and conversations (as REST shows them) equal the SQLite
store's, each batch written by the writer's SQL (`persist.write_prepared`) in a commit of its
own."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from sqlalchemy import Connection

from tests.collector.suites.checkutil import CAPTURES, otlp_json_line
from tests.spans import ToolStep, agent_turn, capture, to_request
from tooltrail.collector import conversation_view
from tooltrail.collector.api import convert
from tooltrail.collector.extract import DEFAULT_CONVERSATION_KEYS, ExtractOptions
from tooltrail.collector.memory_store import MemoryStore
from tooltrail.collector.projects import DEFAULT_PROJECT
from tooltrail.collector.store import leases, queries
from tooltrail.collector.store.persist import write_prepared
from tooltrail.collector.store.rows import prepare
from tooltrail.collector.suites import bench, run
from tooltrail.collector.suites.inputs import Read, read_input

ALL = 1 << 30


def rekeyed(path: Path) -> Path:
    """One trace in two requests: its tool spans first (no conversation key: the trace's own),
    then its root, which names the conversation; then the first request again (a resend)."""
    tp, exporter = capture()
    agent_turn(tp, "rekeyed-1", [ToolStep("lookup_order", {"order_id": 1}),
                                 ToolStep("issue_refund", {"amount": 2}, raises="denied")])
    spans = exporter.get_finished_spans()
    roots = [s for s in spans if s.parent is None]
    rest = [s for s in spans if s.parent is not None]
    tp.shutdown()
    lines = [otlp_json_line(to_request(part)) for part in (rest, roots, rest)]
    path.write_text("".join(line + "\n" for line in lines))
    return path


def sources(tmp_path: Path) -> list[str]:
    bench.write_inputs(tmp_path / "bench.jsonl", 30)
    captured = sorted(str(p) for p in CAPTURES.glob("*/spans.otlp.json"))
    events = sorted(str(p) for p in CAPTURES.glob("adk_events/*.jsonl"))
    return [str(tmp_path / "bench.jsonl"), str(rekeyed(tmp_path / "rekeyed.jsonl")),
            *captured, *events]


def sql_view(conn: Connection) -> dict[str, Any]:
    facts = leases.facts_upto(conn, ALL) or []
    order, calls = leases.trajectory_rows(conn, [f.id for f in facts])
    out = {}
    for f in facts:
        row = queries.get_conversation(conn, f.key)
        assert row is not None
        shown = convert.conversation(row, conversation_view.conversation_turns(conn, f.id))
        out[f.key] = _view(f, order[f.id], calls, shown.model_dump(mode="json"))
    return out


def memory_view(store: MemoryStore) -> dict[str, Any]:
    facts = store.facts()
    order, calls = store.trajectory_rows([f.id for f in facts])
    out = {}
    for f in facts:
        cid = store.conversation_id(f.key, DEFAULT_PROJECT)
        assert cid == f.id
        turns = conversation_view.shown_turns(*store.conversation_rows(f.id))
        shown = convert.conversation(store.conversation_row(f.id, turns), turns)
        out[f.key] = _view(f, order[f.id], calls, shown.model_dump(mode="json"))
    return out


def _view(f: leases.ConversationFacts, turns: list[tuple[int, str]],
          calls: dict[int, list[Any]], shown: dict[str, Any]) -> dict[str, Any]:
    """What the two stores must agree on (ids and write times aside)."""
    return {"facts": (f.key, f.service, f.agents, f.attributes, f.project),
            "turns": [(key, calls.get(tid, [])) for tid, key in turns],
            "shown": {k: v for k, v in shown.items() if k not in ("first_seen", "last_seen")}}


def test_memory_store_reads_what_the_writer_stores(tmp_path: Path) -> None:
    inputs = sources(tmp_path)
    options = ExtractOptions(DEFAULT_CONVERSATION_KEYS)
    store = MemoryStore()
    memory_reads = run.remember(store, inputs, options)
    with run.temporary_store() as engine:
        sql_reads = []
        for source in inputs:  # one batch a commit, as `add` keeps one (see its docstring)
            sql_reads.append(Read(source, None))
            for batch in read_input(source, options, None, sql_reads[-1]):
                if not batch.empty:
                    with engine.begin() as conn:
                        write_prepared(conn, [prepare(batch)], time.time(),
                                       conversation_view.counts)
        with engine.connect() as conn:
            stored = sql_view(conn)
    assert [r.error for r in memory_reads] == [r.error for r in sql_reads]
    assert [r.conversations for r in memory_reads] == [r.conversations for r in sql_reads]
    kept = memory_view(store)
    assert "rekeyed-1" in kept and len(kept) > 40
    assert sorted(kept) == sorted(stored)
    for key, view in stored.items():
        assert kept[key] == view, key
