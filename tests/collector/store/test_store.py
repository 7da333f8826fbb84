"""The store on both databases: migrations, idempotent writes, re-keying late roots."""

from __future__ import annotations

import time

from sqlalchemy import Connection, func, inspect, select

from tests.spans import ToolStep, agent_turn, capture, to_request
from tooltrail.collector.extract import extract
from tooltrail.collector.model import Batch
from tooltrail.collector.store.db import at_head, make_engine, migrate
from tooltrail.collector.store.persist import write_batches
from tooltrail.collector.store.rows import CALL_FIELDS
from tooltrail.collector.store.tables import conversations, tool_calls, turns


def test_migrations_reach_head_and_create_every_table(database_url: str) -> None:
    migrate(database_url)
    engine = make_engine(database_url)
    assert at_head(engine)
    names = set(inspect(engine).get_table_names())
    assert {"conversations", "turns", "tool_calls", "expectations", "results", "jobs",
            "ingest_errors", "alembic_version"} <= names
    migrate(database_url)  # idempotent
    engine.dispose()


def test_late_root_rekeys_the_trace_and_resend_is_idempotent(database_url: str) -> None:
    migrate(database_url)
    engine = make_engine(database_url)
    tp, spans = capture()
    trace_id = agent_turn(tp, "conv-late", [ToolStep("a", {"x": 1}, 1), ToolStep("b", {}, 2)])
    agent_turn(tp, "conv-late", [])  # a second turn with no tool calls
    finished = spans.get_finished_spans()
    first_trace = [s for s in finished if format(s.context.trace_id, "032x") == trace_id]
    tools = [s for s in first_trace if s.name.startswith("execute_tool")]
    rest = [s for s in finished if s not in tools]

    with engine.begin() as conn:
        write_batches(conn, [extract(to_request(tools))], time.time())
    with engine.connect() as conn:
        keys = [k for (k,) in conn.execute(select(conversations.c.key))]
    assert keys == [trace_id]  # keyed by its trace until the root arrives

    with engine.begin() as conn:
        write_batches(conn, [extract(to_request(rest))], time.time())
        write_batches(conn, [extract(to_request(finished))], time.time())  # resend: no dupes
    with engine.connect() as conn:
        rows = conn.execute(select(conversations)).all()
        assert [r.key for r in rows] == ["conv-late"]
        (conv,) = rows
        assert (conv.turn_count, conv.call_count, conv.error_count) == (2, 2, 0)
        assert conv.agents == ["support"] and conv.service == "support-agent"
        assert conn.execute(select(func.count()).select_from(tool_calls)).scalar() == 2
        ordered = conn.execute(
            select(turns.c.trace_id).order_by(turns.c.start_ns)
        ).scalars().all()
        assert ordered[0] == trace_id
    engine.dispose()


def test_one_transaction_many_requests(database_url: str) -> None:
    migrate(database_url)
    engine = make_engine(database_url)
    batches = []
    for i in range(20):
        tp, spans = capture()
        agent_turn(tp, f"conv-{i % 5}", [ToolStep("t", {"i": i}, i)])
        batches.append(extract(to_request(spans.get_finished_spans())))
    with engine.begin() as conn:
        write_batches(conn, batches, time.time())
    with engine.connect() as conn:
        counts = dict(conn.execute(select(conversations.c.key, conversations.c.call_count)).all())
    assert counts == {f"conv-{i}": 4 for i in range(5)}
    engine.dispose()


def write_at_0001(conn: Connection, batch: Batch) -> None:
    """A batch's rows in the schema of revision 0001 (today's writer also writes `source`)."""
    (info,) = batch.traces
    cid = conn.execute(conversations.insert().values(
        key=info.conversation_key, first_seen=0.0, last_seen=0.0)).inserted_primary_key[0]
    tid = conn.execute(turns.insert().values(
        conversation_id=cid, turn_key=info.turn_key, trace_id=info.trace_id,
        start_ns=info.start_ns, end_ns=info.end_ns, key_rank=info.key_rank,
    )).inserted_primary_key[0]
    names = [c for c in CALL_FIELDS if c != "source"]
    conn.execute(tool_calls.insert(), [
        {"conversation_id": cid, "turn_id": tid,
         **{n: getattr(c, n) for n in names}} for c in batch.calls])


def test_migration_0003_adds_source_and_marks_stored_calls_otel(database_url: str) -> None:
    from alembic import command

    from tooltrail.collector.store.db import alembic_config

    config = alembic_config(database_url)
    command.upgrade(config, "0002")
    engine = make_engine(database_url)
    tp, spans = capture()
    agent_turn(tp, "conv-0003", [ToolStep("a", {"x": 1}, 1)])
    with engine.begin() as conn:
        write_at_0001(conn, extract(to_request(spans.get_finished_spans())))
    assert "source" not in {c["name"] for c in inspect(engine).get_columns("tool_calls")}
    command.upgrade(config, "head")
    engine.dispose()
    with engine.connect() as conn:
        assert conn.execute(select(tool_calls.c.name, tool_calls.c.source)).all() == [("a", "otel")]
    command.downgrade(config, "0002")
    engine.dispose()
    assert "source" not in {c["name"] for c in inspect(engine).get_columns("tool_calls")}
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(tool_calls)).scalar() == 1
    command.upgrade(config, "head")
    engine.dispose()


def test_migration_0002_drops_the_tool_call_foreign_keys_and_keeps_the_rows(
    database_url: str,
) -> None:
    from alembic import command

    from tooltrail.collector.store.db import alembic_config

    config = alembic_config(database_url)
    command.upgrade(config, "0001")
    engine = make_engine(database_url)
    tp, spans = capture()
    agent_turn(tp, "conv-mig", [ToolStep("a", {"x": 1}, 1), ToolStep("b", {}, 2)])
    with engine.begin() as conn:
        write_at_0001(conn, extract(to_request(spans.get_finished_spans())))
    assert len(inspect(engine).get_foreign_keys("tool_calls")) == 2

    command.upgrade(config, "head")
    engine.dispose()  # SQLite: the table was recreated under the pooled connections
    assert at_head(engine)
    assert inspect(engine).get_foreign_keys("tool_calls") == []
    with engine.connect() as conn:
        assert sorted(conn.execute(select(tool_calls.c.name)).scalars()) == ["a", "b"]
    indexes = {i["name"] for i in inspect(engine).get_indexes("tool_calls")}
    assert {"ix_tool_calls_conversation", "ix_tool_calls_name", "ix_tool_calls_turn"} <= indexes
    unique = inspect(engine).get_unique_constraints("tool_calls")
    assert [u["column_names"] for u in unique] == [["trace_id", "span_id"]]  # resends skipped

    with engine.begin() as conn:  # possible without the keys; the downgrade drops it
        row = conn.execute(select(tool_calls).limit(1)).one()._asdict()
        del row["id"]
        conn.execute(tool_calls.insert(), {**row, "span_id": "orphan",
                                           "conversation_id": 10**9, "turn_id": 10**9})
    command.downgrade(config, "0001")
    engine.dispose()
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(tool_calls)).scalar() == 2
    referred = sorted(fk["referred_table"] for fk in inspect(engine).get_foreign_keys("tool_calls"))
    assert referred == ["conversations", "turns"]
    command.upgrade(config, "head")
    engine.dispose()
    assert inspect(engine).get_foreign_keys("tool_calls") == []
    engine.dispose()
