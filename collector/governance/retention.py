"""Retention and deletion: conversations and everything derived from them leave the store.

One deletion for both uses: `delete_conversations` removes the given conversations' rows from
every table of ours that has a `conversation_id` column (turns, tool calls — which have no
foreign key since migration 0002 —, results, per-tool counts, and the tables other modules add
to the same metadata), the ingest errors of their traces, then the conversations themselves.
It never relies on ON DELETE CASCADE, so it is exact on SQLite connections without foreign keys.

`expire` deletes conversations last seen before a cut-off, BATCH at a time, each batch its own
short transaction (the worker calls it between scoring rounds), so a large backlog never holds
the writer's locks for long. On PostgreSQL the rows are locked with SKIP LOCKED: a conversation
the writer is updating right now is left for the next round.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Engine, Table, delete, select

from tooltrail.collector.projects import DEFAULT_PROJECT
from tooltrail.collector.store import archive
from tooltrail.collector.store.bulk import among
from tooltrail.collector.store.tables import conversations, ingest_errors, metadata, turns

log = logging.getLogger(__name__)

BATCH = 500  # conversations deleted per transaction
MAX_BATCHES = 20  # per call of `expire`: the worker's round stays bounded
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")


def parse_duration(text: str) -> float:
    """Seconds in `30d`, `12h`, `90m`, `45s`, `2w`; raises ValueError otherwise."""
    found = DURATION.match(text)
    if found is None or float(found.group(1)) <= 0:
        raise ValueError("a positive duration such as 30d, 12h, 90m or 45s")
    return float(found.group(1)) * UNITS[found.group(2)]


def derived_tables() -> list[Table]:
    """Our tables whose rows belong to one conversation (by a `conversation_id` column)."""
    return [t for t in metadata.sorted_tables if "conversation_id" in t.c and t is not turns]


def delete_conversations(conn: Connection, ids: Sequence[int]) -> int:
    """Delete the conversations `ids` and every row derived from them; returns how many
    conversations were deleted (the caller owns the transaction)."""
    if not ids:
        return 0
    part = sorted(ids)
    traces = [t for (t,) in conn.execute(
        select(turns.c.trace_id).where(among(conn, turns.c.conversation_id, part)).distinct())]
    archive.forget(conn, part)  # before its index rows go: requests others share are rewritten
    for table in derived_tables():
        conn.execute(delete(table).where(among(conn, table.c.conversation_id, part)))
    if traces:
        conn.execute(delete(ingest_errors).where(among(conn, ingest_errors.c.trace_id, traces)))
    conn.execute(delete(turns).where(among(conn, turns.c.conversation_id, part)))
    return conn.execute(delete(conversations).where(among(conn, conversations.c.id, part))).rowcount


def delete_by_key(conn: Connection, key: str, project: str = DEFAULT_PROJECT) -> bool:
    """Delete `project`'s conversation `key` with everything derived from it; False if
    unknown."""
    query = select(conversations.c.id).where(conversations.c.key == key,
                                             conversations.c.project == project)
    if conn.dialect.name == "postgresql":
        query = query.with_for_update()
    found = conn.execute(query).scalar()
    return found is not None and delete_conversations(conn, [found]) > 0


def expired_batch(conn: Connection, cutoff: float, limit: int = BATCH) -> list[tuple[int, Any]]:
    """(id, key) of up to `limit` conversations last seen before `cutoff`, locked for delete."""
    query = (select(conversations.c.id, conversations.c.key)
             .where(conversations.c.last_seen < cutoff)
             .order_by(conversations.c.last_seen).limit(limit))
    if conn.dialect.name == "postgresql":
        query = query.with_for_update(skip_locked=True)
    return [(cid, key) for cid, key in conn.execute(query)]


def expire(engine: Engine, retention: float, now: float | None = None,
           batches: int = MAX_BATCHES, batch: int = BATCH) -> int:
    """Delete conversations last seen more than `retention` seconds ago, at most `batches`
    transactions of `batch`; returns how many were deleted."""
    cutoff = (time.time() if now is None else now) - retention
    total = 0
    for _ in range(batches):
        with engine.begin() as conn:
            found = expired_batch(conn, cutoff, batch)
            if not found:
                break
            total += delete_conversations(conn, [cid for cid, _ in found])
        if len(found) < batch:
            break
    if total:
        log.info("retention: deleted %d conversations last seen before %s", total,
                 time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(cutoff)))
    return total
