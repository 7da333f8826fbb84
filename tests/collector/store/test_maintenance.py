"""Workers keep planner statistics of tooltrail's tables when nothing else does."""

from __future__ import annotations

import time
from pathlib import Path

from sqlalchemy import Connection, Engine, text

from tooltrail.collector.bench.seed import seed
from tooltrail.collector.metrics import Metrics
from tooltrail.collector.store.db import make_engine, migrate
from tooltrail.collector.store.maintenance import refresh_statistics, stale_tables
from tooltrail.collector.worker import Worker

IDS = ", ".join(str(i) for i in range(100, 120))
QUERY = f"SELECT * FROM tool_calls WHERE conversation_id IN ({IDS})"


def test_stale_tables_follows_the_autovacuum_rule() -> None:
    rows = [("a", 1000, 151, True), ("b", 1000, 150, True), ("c", 0, 51, False),
            ("d", 0, 50, False), ("e", 10, 5000, False)]
    assert stale_tables(rows, autovacuum=False) == ["a", "c", "e"]
    # autovacuum on: only what it has never analyzed (it will see to the rest)
    assert stale_tables(rows, autovacuum=True) == ["c", "e"]


def estimated_rows(conn: Connection) -> int:
    plan = conn.execute(text(f"EXPLAIN (FORMAT JSON) {QUERY}")).scalar_one()
    return int(plan[0]["Plan"]["Plan Rows"])


def wait_for_row_counts(engine: Engine, table: str, rows: int, seconds: float = 15) -> None:
    """Until the statistics system counts `rows` live rows in `table` (sessions report their
    counts when they end or go idle, not at commit: up to seconds later)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with engine.connect() as conn:
            live = conn.execute(text("SELECT n_live_tup FROM pg_stat_user_tables"
                                     " WHERE relname = :t"), {"t": table}).scalar()
        if live is not None and live >= rows:
            return
        time.sleep(0.1)
    raise AssertionError(f"{table}: live rows not reported within {seconds} s")


def test_worker_analyzes_never_analyzed_tables(pg_url: str) -> None:
    writer = make_engine(pg_url)
    seed(writer, 3000, 10)  # 20 conversations of 10 calls: 200 rows match QUERY
    writer.dispose()  # its sessions end and report their row counts to the statistics system
    engine = make_engine(pg_url)
    try:
        wait_for_row_counts(engine, "tool_calls", 30_000)
        with engine.connect() as conn:
            before = estimated_rows(conn)
        worker = Worker(engine, Metrics(), settle_seconds=1, poll_seconds=0.1, batch=10,
                        lease_seconds=30)
        worker.refresh_statistics()
        with engine.connect() as conn:
            unanalyzed = conn.execute(text(
                "SELECT relname FROM pg_stat_user_tables WHERE n_live_tup > 1000"
                " AND last_analyze IS NULL AND last_autoanalyze IS NULL")).scalars().all()
            after = estimated_rows(conn)
        assert unanalyzed == []
        assert before > 1000  # no statistics: the planner guesses far too many rows
        assert 100 <= after <= 400, after
        with engine.begin() as conn:  # nothing changed since: nothing to do
            assert refresh_statistics(conn) == []
    finally:
        engine.dispose()


def test_sqlite_optimize_runs(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/t.db"
    migrate(url)
    engine = make_engine(url)
    with engine.begin() as conn:
        assert refresh_statistics(conn) == []
    engine.dispose()
