"""collector.store.production on both stores: buckets corrected by differences as
conversations change (late calls, a turn re-keyed to its real conversation), never doubled."""

from __future__ import annotations

import time

import sqlalchemy as sa
from sqlalchemy import Engine, func, inspect, select

from tests.spans import ToolStep, agent_turn, capture, to_request
from tooltrail.collector.extract import extract
from tooltrail.collector.model import KEY_FROM_ROOT, Batch, ToolCall, TraceInfo
from tooltrail.collector.production import signals
from tooltrail.collector.store import leases, production
from tooltrail.collector.store.db import make_engine, migrate
from tooltrail.collector.store.persist import write_batches
from tooltrail.collector.store.tables import conversations, signal_buckets, signal_turns


def record_all(engine: Engine) -> None:
    with engine.begin() as conn:
        ids = list(conn.execute(select(conversations.c.id)).scalars())
        signals.record(conn, leases.conversation_facts(conn, ids))


def test_late_calls_and_a_rekeyed_turn_are_counted_once(database_url: str) -> None:
    migrate(database_url)
    engine = make_engine(database_url)
    tp, spans = capture()
    trace_id = agent_turn(tp, "conv-sig", [ToolStep("a", {"x": 1}, 1),
                                           ToolStep("b", {}, raises="boom")])
    agent_turn(tp, "conv-sig", [])
    finished = spans.get_finished_spans()
    tools = [s for s in finished if s.name.startswith("execute_tool")
             and format(s.context.trace_id, "032x") == trace_id]
    first, late = tools[:1], tools[1:]
    rest = [s for s in finished if s not in tools]

    with engine.begin() as conn:
        write_batches(conn, [extract(to_request(first))], time.time())
    record_all(engine)
    with engine.connect() as conn:
        (only,) = production.totals(conn).values()
    assert (only.turns, only.calls, only.failed) == (1, 1, 0)

    with engine.begin() as conn:  # the late call, then the roots: the turn is re-keyed
        write_batches(conn, [extract(to_request(late))], time.time())
        write_batches(conn, [extract(to_request(rest))], time.time())
    record_all(engine)
    record_all(engine)  # nothing changed: nothing moves
    with engine.connect() as conn:
        totals = production.totals(conn)
        assert list(totals) == [("support-agent", "")]
        counts = totals[("support-agent", "")]
        assert (counts.turns, counts.zero_turns, counts.calls, counts.failed) == (2, 1, 2, 1)
        assert counts.tools == {"a": 1, "b": 1}
        assert counts.histogram == {"0": 1, "2": 1}
        assert conn.execute(select(func.count()).select_from(signal_turns)).scalar() == 2
        rows = production.buckets(conn, service="support-agent", width=production.DAY)
        assert sum(r.counts.turns for r in rows) == 2
        assert production.latest_versions(conn, window=10 * 365 * 86400, cap=1,
                                          now=time.time()) == totals
    engine.dispose()


def test_migration_0004_creates_and_drops_the_signal_tables(database_url: str) -> None:
    from alembic import command

    from tooltrail.collector.store.db import alembic_config

    config = alembic_config(database_url)
    command.upgrade(config, "0003")
    engine = make_engine(database_url)
    assert "signal_buckets" not in inspect(engine).get_table_names()
    command.upgrade(config, "0004")
    engine.dispose()
    assert {"signal_turns", "signal_buckets"} <= set(inspect(engine).get_table_names())
    row = {"service": "s", "version": "1", "agent": "", "bucket": 0, "turns": 1,
           "zero_turns": 1, "calls": 0, "calls_sq": 0, "failed": 0, "unexecuted": 0,
           "pending": 0, "histogram": {"0": 1}, "tools": {}}
    at_0004 = sa.table("signal_buckets", *(  # the table as 0004 made it (0005 adds project)
        sa.column(name, signal_buckets.c[name].type) for name in row))
    with engine.begin() as conn:
        conn.execute(at_0004.insert(), [row])
    command.downgrade(config, "0003")
    engine.dispose()
    assert "signal_buckets" not in inspect(engine).get_table_names()
    command.upgrade(config, "head")
    engine.dispose()


def test_pending_approvals_and_the_version_are_counted(database_url: str) -> None:
    """A call awaiting a human's approval is stored with status `pending` (the approval round
    trip of kagent / ADK); it counts in the pending-approval rate."""
    migrate(database_url)
    engine = make_engine(database_url)
    trace_id, start = "ab" * 16, 1_700_000_000_000_000_000
    calls = tuple(ToolCall(
        trace_id=trace_id, span_id=f"{i:016x}", parent_span_id=None, name=name, call_id=None,
        arguments={}, arguments_raw=None, result=None, error=None, status=status,
        start_ns=start + i, end_ns=start + i + 1, convention="genai",
    ) for i, (name, status) in enumerate([("search_users", "ok"), ("ask_user", "pending")]))
    info = TraceInfo(trace_id=trace_id, turn_key=trace_id, conversation_key="conv-hitl",
                     key_rank=KEY_FROM_ROOT, service="github-agent",
                     agents=frozenset({"github_assistant"}), start_ns=start, end_ns=start + 9,
                     has_agent_root=True, attributes={"service.version": "2.1"})
    with engine.begin() as conn:
        write_batches(conn, [Batch(calls, (info,), span_count=3)], time.time())
    record_all(engine)
    with engine.connect() as conn:
        (row,) = production.buckets(conn, version="2.1")
    assert (row.service, row.agent, row.bucket) == ("github-agent", "github_assistant",
                                                    start // 10**9 // 3600 * 3600)
    assert row.counts.pending_rate == 0.5 and row.counts.pending == 1
    engine.dispose()


def test_a_rescoring_job_that_marks_a_conversation_scored_records_its_signals(
    database_url: str,
) -> None:
    """A job over every active expectation marks the conversations it scores as scored, so
    settle-scoring never claims them: the job records their signals itself."""
    from tooltrail.collector.metrics import Metrics
    from tooltrail.collector.store import queries
    from tooltrail.collector.worker import Worker

    migrate(database_url)
    engine = make_engine(database_url)
    tp, spans = capture()
    agent_turn(tp, "conv-job", [ToolStep("a", {"x": 1}, 1)])
    with engine.begin() as conn:
        write_batches(conn, [extract(to_request(spans.get_finished_spans()))], time.time())
        queries.add_expectation_version(conn, "has-a", {
            "id": "has-a", "match": "superset", "calls": [{"name": "a"}]}, must_exist=False)
    worker = Worker(engine, Metrics(), settle_seconds=3600, poll_seconds=1, batch=10,
                    lease_seconds=60)
    assert worker.work_chunk() == 1
    assert worker.score_settled() == 0  # scored by the job: nothing left to settle
    with engine.connect() as conn:
        (counts,) = production.totals(conn).values()
    assert (counts.turns, counts.calls) == (1, 1)
    engine.dispose()


def test_a_growing_conversation_rewrites_only_its_new_turns(database_url: str) -> None:
    """Scored again after a turn was added, a conversation's kept turns that did not change
    are neither deleted nor inserted again: the write does not grow with its history."""
    import random
    from dataclasses import replace

    from tooltrail.collector.bench.seed import conversation_batch

    migrate(database_url)
    engine = make_engine(database_url)
    first = conversation_batch(0, 2, random.Random(1), "grow-")

    def turn(n: int) -> Batch:
        trace = f"{n:032x}"
        (info,) = first.traces
        return replace(first, calls=tuple(replace(c, trace_id=trace, start_ns=c.start_ns + n)
                                          for c in first.calls),
                       traces=(replace(info, trace_id=trace, turn_key=trace,
                                       start_ns=info.start_ns + n, end_ns=info.end_ns + n),))

    written: list[int] = []

    @sa.event.listens_for(engine, "after_cursor_execute")
    def count(conn: object, cursor: object, statement: str, *args: object) -> None:
        if statement.lstrip().startswith(("INSERT INTO signal_turns", "DELETE FROM signal_turns")):
            written.append(cursor.rowcount)  # type: ignore[attr-defined]

    with engine.begin() as conn:
        write_batches(conn, [first, turn(2), turn(3)], time.time())
    record_all(engine)
    assert sum(written) == 3
    written.clear()
    with engine.begin() as conn:
        write_batches(conn, [turn(4)], time.time())
    record_all(engine)
    assert sum(written) == 1  # the new turn inserted; the three kept ones untouched
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(signal_turns)).scalar_one() == 4
        assert conn.execute(select(func.sum(signal_buckets.c.turns))).scalar_one() == 4
    engine.dispose()
