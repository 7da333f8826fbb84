"""Writing extracted batches in one transaction, set-based, idempotent on (trace_id, span_id).

Two steps. `prepare` is pure and may run in another process: it serialises each tool call to a
row (JSON already encoded, oversized values capped) so that pickling it back is cheap.
`write_prepared` does the SQL of one group commit with a fixed number of statements whatever
the number of requests: look up existing turns, upsert conversations and turns, bulk-insert the
calls (SQLite `executemany`, PostgreSQL one `INSERT … SELECT FROM unnest(arrays)`), recount
the touched conversations.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import orjson
from sqlalchemy import (
    ColumnDefault,
    Connection,
    Insert,
    Integer,
    Table,
    bindparam,
    case,
    delete,
    func,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError

from collector.capture.merge import POSITION_PREFIX
from collector.model import Batch, TraceInfo
from collector.store.jsonio import dumps
from collector.store.queries import conversation_turns
from collector.store.rows import (
    CALL_FIELDS,
    MAX_ARGUMENTS,
    MAX_ATTRIBUTES,
    PreparedBatch,
    prepare,
)
from collector.store.tables import conversations, ingest_errors, tool_calls, turns

CALL_COLUMNS = ("conversation_id", "turn_id", *CALL_FIELDS)
PG_CALL_TYPES = (  # the temporary table COPY fills, in CALL_COLUMNS order
    "bigint", "bigint", "text", "text", "text", "text", "text", "jsonb", "text", "jsonb", "text",
    "text", "bigint", "bigint", "integer", "text", "boolean", "jsonb", "text",
)
IN_CHUNK = 900  # bound parameters per IN list (SQLite's limit is 32766)


def insert_ignore(conn: Connection, table: Table) -> Insert:
    """INSERT … ON CONFLICT DO NOTHING for the connection's dialect."""
    if conn.dialect.name == "postgresql":
        return postgresql.insert(table).on_conflict_do_nothing()
    return sqlite.insert(table).on_conflict_do_nothing()


def chunks(items: Sequence[Any], size: int = IN_CHUNK) -> Iterator[Sequence[Any]]:
    """`items` in slices of at most `size`."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


@dataclass(slots=True)
class MergedTrace:
    """One turn's facts merged across all requests of a group commit."""

    info: TraceInfo
    agents: set[str] = field(default_factory=set)

    def merge(self, other: TraceInfo) -> None:
        """Fold another request's view of the same turn in."""
        info = self.info
        best = other if other.key_rank > info.key_rank else info
        self.info = TraceInfo(
            trace_id=info.trace_id,
            turn_key=info.turn_key,
            conversation_key=best.conversation_key,
            key_rank=best.key_rank,
            service=info.service or other.service,
            agents=info.agents | other.agents,
            start_ns=min(info.start_ns, other.start_ns),
            end_ns=max(info.end_ns, other.end_ns),
            has_agent_root=info.has_agent_root or other.has_agent_root,
            attributes={**other.attributes, **info.attributes},
            root_span_id=info.root_span_id or other.root_span_id,
            project=best.project,  # the project goes with the key
        )


def merge_traces(batches: Iterable[Batch | PreparedBatch]) -> dict[str, TraceInfo]:
    """Turn key → merged TraceInfo over every batch."""
    merged: dict[str, MergedTrace] = {}
    for batch in batches:
        for info in batch.traces:
            current = merged.get(info.turn_key)
            if current is None:
                merged[info.turn_key] = MergedTrace(info)
            else:
                current.merge(info)
    return {key: m.info for key, m in merged.items()}


COUNTERS = ("turn_count", "call_count", "error_count", "change_seq", "scored_seq")
COUNTER_DEFAULTS = ", ".join(  # their column defaults (applied by SQLAlchemy, not the server)
    str(cast(ColumnDefault, conversations.c[name].default).arg) for name in COUNTERS
)


def ensure_conversations(
    conn: Connection, infos: Sequence[TraceInfo], now: float
) -> dict[tuple[str, str], int]:
    """(project, conversation key) → id, creating missing conversations."""
    first = {(i.project, i.conversation_key): i for i in infos}
    if not first:
        return {}
    found = _conversation_ids(conn, first)
    missing = [first[k] for k in sorted(first) if k not in found]
    if not missing:
        return found
    if conn.dialect.name == "postgresql":
        columns = ("project", "key", "service", "agents", "attributes", "first_seen",
                   "last_seen", "start_ns", "end_ns")
        kinds = ("text", "text", "text", "jsonb", "jsonb", "float8", "float8", "bigint", "bigint")
        arrays = ", ".join(f"%s::{kind}[]" for kind in kinds)
        found.update(((project, key), cid) for project, key, cid in conn.exec_driver_sql(
            f"INSERT INTO conversations ({', '.join(columns + COUNTERS)}) "
            f"SELECT *, {COUNTER_DEFAULTS} "
            f"FROM unnest({arrays}) ON CONFLICT DO NOTHING RETURNING project, key, id",
            ([i.project for i in missing], [i.conversation_key for i in missing],
             [i.service for i in missing],
             [dumps(sorted(i.agents)) for i in missing], [dumps(i.attributes) for i in missing],
             [now] * len(missing), [now] * len(missing), [i.start_ns for i in missing],
             [i.end_ns for i in missing]),
        ))
    else:
        conn.execute(insert_ignore(conn, conversations), [
            {"project": i.project, "key": i.conversation_key, "service": i.service,
             "agents": sorted(i.agents), "attributes": i.attributes, "first_seen": now,
             "last_seen": now, "start_ns": i.start_ns, "end_ns": i.end_ns}
            for i in missing
        ])
    late = {k: first[k] for k in first if k not in found}  # SQLite, or another writer's
    found.update(_conversation_ids(conn, late))
    return found


def _conversation_ids(
    conn: Connection, wanted: dict[tuple[str, str], TraceInfo]
) -> dict[tuple[str, str], int]:
    """Ids of the stored conversations among `wanted` (looked up by key, kept by project)."""
    keys = sorted({key for _, key in wanted})
    return {(project, key): cid
            for project, key, cid in lookup(conn, "conversations", "key", "project, key, id", keys)
            if (project, key) in wanted}


def write_batches(
    conn: Connection, batches: Sequence[Batch | PreparedBatch], now: float
) -> None:
    """Store every turn, conversation and tool call of `batches` (caller owns the transaction)."""
    write_prepared(conn, [b if isinstance(b, PreparedBatch) else prepare(b) for b in batches], now)


def lookup(
    conn: Connection, table: str, key: str, columns: str, keys: Sequence[Any]
) -> list[Any]:
    """Rows of `table` whose `key` is in `keys`: one `= ANY(array)` on PostgreSQL, chunked IN
    lists on SQLite."""
    if not keys:
        return []
    if conn.dialect.name == "postgresql":
        sql = f"SELECT {columns} FROM {table} WHERE {key} = ANY(%s)"
        return list(conn.exec_driver_sql(sql, (list(keys),)))
    found: list[Any] = []
    for part in chunks(keys):
        marks = ", ".join("?" for _ in part)
        found += conn.exec_driver_sql(
            f"SELECT {columns} FROM {table} WHERE {key} IN ({marks})", tuple(part)
        )
    return found


def _json_list(value: Any) -> list[Any]:
    if isinstance(value, str | bytes):
        value = orjson.loads(value)
    return value if isinstance(value, list) else []


def write_prepared(conn: Connection, batches: Sequence[PreparedBatch], now: float) -> None:
    """The SQL of one group commit (caller owns the transaction)."""
    infos = merge_traces(batches)
    if not infos:
        return
    keys = list(infos)
    existing = {
        row.turn_key: row
        for row in lookup(conn, "turns", "turn_key", "id, turn_key, conversation_id, key_rank, "
                          "start_ns, end_ns, agents, has_agent_root, root_span_id", keys)
    }
    # a trace already stored under a key at least as sure keeps it: a later request that
    # knows less (no key: the trace id) must not create a conversation of its own
    conv_ids = ensure_conversations(conn, [
        i for k, i in infos.items() if k not in existing or i.key_rank > existing[k].key_rank
    ], now)
    touched: set[int] = set(conv_ids.values())
    orphans: set[int] = set()

    new_turns = [  # in key order, so that concurrent writers lock in the same order
        (conv_ids[(i.project, i.conversation_key)], i.turn_key, i.trace_id, i.start_ns,
         i.end_ns, i.key_rank, i.has_agent_root, orjson.dumps(sorted(i.agents)).decode(),
         i.root_span_id)
        for key, i in sorted(infos.items())
        if key not in existing
    ]
    inserted = insert_turns(conn, new_turns) if new_turns else {}
    turn_updates: list[dict[str, Any]] = []
    moved: list[dict[str, Any]] = []
    for key, row in existing.items():
        info = infos[key]
        target = row.conversation_id
        rank = row.key_rank
        if info.key_rank > row.key_rank:
            target, rank = conv_ids[(info.project, info.conversation_key)], info.key_rank
            if target != row.conversation_id:
                orphans.add(row.conversation_id)
                touched.add(row.conversation_id)
                moved.append({"b_id": row.id, "b_conv": target})
        agents = sorted(set(_json_list(row.agents)) | info.agents)
        turn_updates.append(
            {
                "b_id": row.id,
                "b_conv": target,
                "b_rank": rank,
                "b_start": min(row.start_ns, info.start_ns),
                "b_end": max(row.end_ns, info.end_ns),
                "b_root": row.has_agent_root or info.has_agent_root,
                "b_agents": agents,
                "b_span": row.root_span_id or info.root_span_id,
            }
        )
    if turn_updates:
        turn_updates.sort(key=lambda u: u["b_id"])
        conn.execute(
            update(turns)
            .where(turns.c.id == bindparam("b_id"))
            .values(
                conversation_id=bindparam("b_conv"),
                key_rank=bindparam("b_rank"),
                start_ns=bindparam("b_start"),
                end_ns=bindparam("b_end"),
                has_agent_root=bindparam("b_root"),
                agents=bindparam("b_agents"),
                root_span_id=bindparam("b_span"),
            ),
            turn_updates,
        )
    if moved:
        moved.sort(key=lambda u: u["b_id"])
        conn.execute(
            update(tool_calls)
            .where(tool_calls.c.turn_id == bindparam("b_id"))
            .values(conversation_id=bindparam("b_conv")),
            moved,
        )
    conv_of = {u["b_id"]: u["b_conv"] for u in turn_updates}
    turn_ids = {key: (row.id, conv_of[row.id]) for key, row in existing.items()}
    if new_turns:
        turn_ids.update(inserted)
        late = [key for key in keys if key not in turn_ids]  # SQLite, or another writer's
        turn_ids.update((key, (tid, cid)) for key, tid, cid in lookup(
            conn, "turns", "turn_key", "turn_key, id, conversation_id", late))
    insert_calls(conn, batches, turn_ids)
    touched |= {cid for _, cid in turn_ids.values()}
    seen: dict[int, dict[str, Any]] = {}
    for info in infos.values():
        cid = turn_ids[info.turn_key][1]
        seen[cid] = {**info.attributes, **seen.get(cid, {})}
        if info.service:
            seen[cid].setdefault("service.name", info.service)
    refresh_conversations(conn, touched, seen, now)
    drop_empty(conn, orphans)


TURN_COLUMNS = ("conversation_id", "turn_key", "trace_id", "start_ns", "end_ns", "key_rank",
                "has_agent_root", "agents", "root_span_id")
PG_TURN_TYPES = ("bigint", "text", "text", "bigint", "bigint", "integer", "boolean", "jsonb",
                 "text")


def insert_turns(conn: Connection, rows: list[tuple[Any, ...]]) -> dict[str, tuple[int, int]]:
    """Insert new turns (TURN_COLUMNS order), skipping any another writer just inserted.
    PostgreSQL returns turn key → (id, conversation id) of the rows it inserted; SQLite {}."""
    columns = ", ".join(TURN_COLUMNS)
    if conn.dialect.name == "postgresql":
        arrays = ", ".join(f"%s::{kind}[]" for kind in PG_TURN_TYPES)
        return {key: (tid, cid) for key, tid, cid in conn.exec_driver_sql(
            f"INSERT INTO turns ({columns}) SELECT * FROM unnest({arrays}) ON CONFLICT DO NOTHING "
            "RETURNING turn_key, id, conversation_id",
            tuple(list(col) for col in zip(*rows, strict=True)),
        )}
    marks = ", ".join("?" for _ in TURN_COLUMNS)
    conn.exec_driver_sql(
        f"INSERT INTO turns ({columns}) VALUES ({marks}) ON CONFLICT DO NOTHING", rows
    )
    return {}


def insert_calls(
    conn: Connection, batches: Sequence[PreparedBatch], turn_ids: dict[str, tuple[int, int]]
) -> None:
    """Bulk-insert every call row, skipping spans already stored."""
    rows: list[tuple[Any, ...]] = []
    for batch in batches:
        for row in batch.calls:
            tid, cid = turn_ids[row[0]]
            rows.append((cid, tid, *row))
    if not rows:
        return
    columns = ", ".join(CALL_COLUMNS)
    if conn.dialect.name == "postgresql":
        from psycopg.errors import UniqueViolation

        try:  # the common case, no span stored before: COPY straight into the table
            with conn.begin_nested():
                copy_rows(conn, "tool_calls", rows)
            return
        except (IntegrityError, UniqueViolation):  # a resend: stage, then skip stored spans
            pass
        types = ", ".join(f"{n} {k}" for n, k in zip(CALL_COLUMNS, PG_CALL_TYPES, strict=True))
        conn.exec_driver_sql(
            f"CREATE TEMP TABLE IF NOT EXISTS tooltrail_calls_in ({types}) ON COMMIT DELETE ROWS"
        )
        copy_rows(conn, "tooltrail_calls_in", rows)
        conn.exec_driver_sql(f"INSERT INTO tool_calls ({columns}) SELECT {columns} "
                             "FROM tooltrail_calls_in ON CONFLICT DO NOTHING")
        return
    marks = ", ".join("?" for _ in CALL_COLUMNS)
    conn.exec_driver_sql(
        f"INSERT INTO tool_calls ({columns}) VALUES ({marks}) ON CONFLICT DO NOTHING", rows
    )


def copy_rows(conn: Connection, table: str, rows: list[tuple[Any, ...]]) -> None:
    """COPY rows (CALL_COLUMNS order) into `table`."""
    cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
    with cursor.copy(f"COPY {table} ({', '.join(CALL_COLUMNS)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


# One statement on PostgreSQL: the counts, times and agents of the touched conversations are
# aggregated where the rows are, instead of shipped to Python (same results as the generic path;
# agents sorted by code point, as Python sorts them). Newly seen attributes never overwrite.
REFRESH_PG = """
WITH seen AS (SELECT * FROM unnest(%(ids)s::bigint[], %(seen)s::jsonb[]) AS s(id, attributes)),
t AS (SELECT conversation_id AS id, count(*) AS n, min(start_ns) AS lo, max(end_ns) AS hi
      FROM turns WHERE conversation_id = ANY(%(ids)s) GROUP BY conversation_id),
k AS (SELECT conversation_id AS id, count(*) AS n, count(*) FILTER (WHERE status = 'error') AS e
      FROM tool_calls WHERE conversation_id = ANY(%(ids)s) AND executed
      GROUP BY conversation_id),
a AS (SELECT id, jsonb_agg(agent ORDER BY agent COLLATE "C") AS agents
      FROM (SELECT DISTINCT conversation_id AS id, jsonb_array_elements_text(agents) AS agent
            FROM turns WHERE conversation_id = ANY(%(ids)s)) AS d GROUP BY id)
UPDATE conversations AS c SET
    turn_count = coalesce(t.n, 0), start_ns = coalesce(t.lo, 0), end_ns = coalesce(t.hi, 0),
    call_count = coalesce(k.n, 0), error_count = coalesce(k.e, 0), last_seen = %(now)s,
    agents = coalesce(a.agents, '[]'::jsonb), change_seq = c.change_seq + 1,
    attributes = seen.attributes || c.attributes,
    service = coalesce(nullif(c.service, ''), (seen.attributes || c.attributes) ->> 'service.name')
FROM seen LEFT JOIN t ON t.id = seen.id LEFT JOIN k ON k.id = seen.id LEFT JOIN a ON a.id = seen.id
WHERE c.id = seen.id
"""


class ConversationsDeleted(Exception):
    """Conversations a write adds to were deleted since it looked them up (retention, DELETE):
    a serialization conflict (SQLSTATE 40001), so the request is retried, and the retry creates
    them afresh."""

    sqlstate = "40001"

    def __init__(self, ids: list[int]) -> None:
        super().__init__(f"conversations {ids} were deleted concurrently; retry")


def refresh_conversations(
    conn: Connection, ids: set[int], seen: dict[int, dict[str, Any]], now: float
) -> None:
    """Recount, re-time and mark changed (for the worker) every touched conversation."""
    if not ids:
        return
    id_list = sorted(ids)
    if conn.dialect.name == "postgresql":
        # Lock the conversations (in id order) before counting: a concurrent writer's rows are
        # then committed and seen by the counts below (each statement takes a new snapshot).
        # NO KEY UPDATE: two recounts exclude each other, but not the key-share locks that
        # inserting turns takes (turns' foreign key); FOR UPDATE would conflict with those,
        # and two groups that both added turns to one conversation would deadlock.
        locked = conn.exec_driver_sql(
            "SELECT id FROM conversations WHERE id = ANY(%s) ORDER BY id FOR NO KEY UPDATE",
            (id_list,),
        ).all()
        if len(locked) < len(id_list):  # its calls would be left without their conversation
            raise ConversationsDeleted(sorted(set(id_list) - {cid for (cid,) in locked}))
        conn.exec_driver_sql(REFRESH_PG, {
            "ids": id_list, "seen": [dumps(seen.get(cid, {})) for cid in id_list], "now": now,
        })
        recount_merged(conn, id_list)
        return
    stored: dict[int, tuple[dict[str, Any], str | None]] = {}
    turn_stats: dict[int, tuple[int, int, int]] = {}
    call_stats: dict[int, tuple[int, int]] = {}
    agents_by_conv: dict[int, set[str]] = {}
    for part in chunks(id_list):
        for cid, attributes, service in conn.execute(
            select(conversations.c.id, conversations.c.attributes, conversations.c.service)
            .where(conversations.c.id.in_(part))
        ):
            stored[cid] = (attributes or {}, service)
        for cid, n, lo, hi in conn.execute(
            select(turns.c.conversation_id, func.count(), func.min(turns.c.start_ns),
                   func.max(turns.c.end_ns))
            .where(turns.c.conversation_id.in_(part))
            .group_by(turns.c.conversation_id)
        ):
            turn_stats[cid] = (n, lo, hi)
        for cid, n, errors in conn.execute(
            select(tool_calls.c.conversation_id, func.count(),
                   func.sum((tool_calls.c.status == "error").cast(Integer)))
            # executions only: a request row and its execution are one call
            .where(tool_calls.c.conversation_id.in_(part), tool_calls.c.executed)
            .group_by(tool_calls.c.conversation_id)
        ):
            call_stats[cid] = (n, errors or 0)
        for cid, agents in conn.execute(
            select(turns.c.conversation_id, turns.c.agents)
            .where(turns.c.conversation_id.in_(part))
        ):
            agents_by_conv.setdefault(cid, set()).update(agents or [])
    rows = []
    for cid in id_list:
        n_turns, lo, hi = turn_stats.get(cid, (0, 0, 0))
        n_calls, n_errors = call_stats.get(cid, (0, 0))
        old_attributes, service = stored.get(cid, ({}, None))
        attributes = {**seen.get(cid, {}), **old_attributes}
        rows.append(
            {
                "b_attrs": attributes,
                "b_service": service or attributes.get("service.name"),
                "b_id": cid,
                "b_turns": n_turns,
                "b_calls": n_calls,
                "b_errors": int(n_errors),
                "b_start": lo or 0,
                "b_end": hi or 0,
                "b_now": now,
                "b_agents": sorted(agents_by_conv.get(cid, set())),
            }
        )
    conn.execute(
        update(conversations)
        .where(conversations.c.id == bindparam("b_id"))
        .values(
            turn_count=bindparam("b_turns"),
            call_count=bindparam("b_calls"),
            error_count=bindparam("b_errors"),
            start_ns=bindparam("b_start"),
            end_ns=bindparam("b_end"),
            last_seen=bindparam("b_now"),
            agents=bindparam("b_agents"),
            change_seq=conversations.c.change_seq + 1,
            attributes=bindparam("b_attrs"),
            service=bindparam("b_service"),
        ),
        rows,
    )
    recount_merged(conn, id_list)


def recount_merged(conn: Connection, ids: Sequence[int]) -> None:
    """Count conversations that have explicit (positional) and traced turns as they are read:
    explicit calls merge into the traced turn at their position at read time
    (collector.capture.merge), so the row counts above count a merged call, and a merged turn,
    twice. Their counts come from the reader REST uses (each merged turn once, each executed
    call once). Conversations with turns of one kind only merge nothing: they keep the row
    counts, which are the same thing (and cost no read of their calls)."""
    explicit = case((turns.c.turn_key.startswith(POSITION_PREFIX, autoescape=True), 1), else_=0)
    mixed: list[int] = []
    for part in chunks(ids):
        mixed.extend(cid for (cid,) in conn.execute(
            select(turns.c.conversation_id).where(turns.c.conversation_id.in_(part))
            .group_by(turns.c.conversation_id)
            .having(func.max(explicit) == 1, func.min(explicit) == 0)))
    rows = []
    for cid in sorted(mixed):
        shown = conversation_turns(conn, cid)
        calls = [c for turn in shown for c in turn["tool_calls"] if c["executed"]]
        rows.append({"b_id": cid, "b_turns": len(shown), "b_calls": len(calls),
                     "b_errors": sum(c["status"] == "error" for c in calls)})
    if rows:
        conn.execute(
            update(conversations).where(conversations.c.id == bindparam("b_id")).values(
                turn_count=bindparam("b_turns"), call_count=bindparam("b_calls"),
                error_count=bindparam("b_errors")),
            rows,
        )


def drop_empty(conn: Connection, ids: set[int]) -> None:
    """Delete conversations left with no turn (a trace re-keyed to its real conversation)."""
    if not ids:
        return
    has_turn = select(turns.c.id).where(turns.c.conversation_id == conversations.c.id).exists()
    for part in chunks(sorted(ids)):
        gone = [cid for (cid,) in conn.execute(
            delete(conversations).where(conversations.c.id.in_(part), ~has_turn)
            .returning(conversations.c.id))]
        if gone:  # none expected (their turns' calls moved with the turns); no foreign key
            conn.execute(delete(tool_calls).where(tool_calls.c.conversation_id.in_(gone)))


def record_ingest_errors(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Keep rejected requests and spans, with their reasons, for /api/v1/ingest/errors."""
    if rows:
        conn.execute(ingest_errors.insert(), [_clean_error(r) for r in rows])


def _clean_error(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.encode("utf-8", "replace").decode() if isinstance(v, str) else v)
            for k, v in row.items()}


def prune_ingest_errors(conn: Connection, keep: int) -> None:
    """Delete all but the newest `keep` ingest error rows."""
    newest = conn.execute(select(func.max(ingest_errors.c.id))).scalar()
    if newest is not None and newest > keep:
        conn.execute(delete(ingest_errors).where(ingest_errors.c.id <= newest - keep))



__all__ = ["CALL_FIELDS", "MAX_ARGUMENTS", "MAX_ATTRIBUTES", "PreparedBatch", "prepare",
           "write_batches", "write_prepared"]
