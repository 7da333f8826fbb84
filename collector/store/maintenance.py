"""Planner statistics for tooltrail's tables when the database's own maintenance does not keep
them fresh.

A PostgreSQL table that has never been analyzed has no statistics, and the planner then reads
`conversation_id IN (…500 ids…)` as matching half the table: a sequential scan per worker chunk
whose cost grows with the store (README, "Measured"). Workers therefore ANALYZE a
table of ours when its changes since the last analyze pass PostgreSQL's own autovacuum rule
(50 rows + 10 %), if autovacuum is off or has not analyzed it yet. One worker at a time (an
advisory lock); other workers skip the round. SQLite gets `PRAGMA optimize`, which is cheap and
does nothing when nothing changed.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import Connection, text

from tooltrail.collector.store.tables import metadata

log = logging.getLogger(__name__)

ANALYZE_LOCK = 0x7007_7A11  # pg advisory lock key: one worker analyzes at a time
THRESHOLD_ROWS = 50
THRESHOLD_FRACTION = 0.1


def stale_tables(rows: list[Any], autovacuum: bool) -> list[str]:
    """The tables (rows of name, live rows, changes since analyze, analyzed ever) to analyze."""
    return sorted(
        name
        for name, live, changed, analyzed in rows
        if changed > THRESHOLD_ROWS + THRESHOLD_FRACTION * live
        and (not autovacuum or not analyzed)
    )


def refresh_statistics(conn: Connection) -> list[str]:
    """Analyze our tables whose statistics are missing or stale; returns their names."""
    if conn.dialect.name == "sqlite":
        # a bounded sample: an unlimited ANALYZE of a large table would hold the write lock
        conn.exec_driver_sql("PRAGMA analysis_limit=400")
        conn.exec_driver_sql("PRAGMA optimize")
        return []
    if conn.dialect.name != "postgresql":
        return []
    if not conn.execute(text("SELECT pg_try_advisory_xact_lock(:k)"), {"k": ANALYZE_LOCK}).scalar():
        return []
    autovacuum = conn.execute(text("SELECT current_setting('autovacuum')")).scalar() == "on"
    rows = conn.execute(
        text(
            "SELECT relname, n_live_tup, n_mod_since_analyze,"
            " (last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL)"
            " FROM pg_stat_user_tables"
            " WHERE schemaname = current_schema() AND relname = ANY(:names)"
        ),
        {"names": sorted(metadata.tables)},
    ).all()
    stale = stale_tables(list(rows), autovacuum)
    for name in stale:
        conn.exec_driver_sql(f'ANALYZE "{name}"')
    if stale:
        log.info("analyzed %s (planner statistics were missing or stale)", ", ".join(stale))
    return stale
