"""Writing extracted batches in one transaction, set-based, idempotent on (trace_id, span_id).

Two steps. `prepare` is pure and may run in another process: it serialises each tool call to a
row (JSON already encoded, oversized values capped) so that pickling it back is cheap.
`write_prepared` does the SQL of one group commit with a fixed number of statements whatever
the number of requests: look up existing turns and conversations, insert the missing ones
(returning their ids), bulk-insert the calls (SQLite `executemany`, PostgreSQL COPY), then
bring the touched conversations up to date *incrementally*: their stored counts, times and
agents plus what this group inserted, never recounted from their turns and calls — except
for the conversations a re-keyed turn left or joined, and (SQLite) when a resent span was
skipped, which are recounted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

import orjson
from sqlalchemy import (
    ColumnDefault,
    Connection,
    Insert,
    Integer,
    Table,
    bindparam,
    delete,
    func,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError

from tooltrail.collector.model import POSITION_PREFIX, Batch, TraceInfo
from tooltrail.collector.store import archive
from tooltrail.collector.store.bulk import among, copy_rows, json_rows, pg_type
from tooltrail.collector.store.jsonio import dumps
from tooltrail.collector.store.rows import (
    CALL_FIELDS,
    MAX_ARGUMENTS,
    MAX_ATTRIBUTES,
    PreparedBatch,
    prepare,
)
from tooltrail.collector.store.tables import (
    conversations,
    ingest_errors,
    metadata,
    tool_calls,
    turns,
)

# Every column a writer fills, in table order (the surrogate `id` is the database's).
CALL_COLUMNS = tuple(c.name for c in tool_calls.c if c.name != "id")
TURN_COLUMNS = tuple(c.name for c in turns.c if c.name != "id")
COUNTERS = ("turn_count", "call_count", "error_count", "change_seq", "scored_seq")
STATUS = CALL_FIELDS.index("status")
EXECUTED = CALL_FIELDS.index("executed")
if ("conversation_id", "turn_id", *CALL_FIELDS) != CALL_COLUMNS:
    raise RuntimeError("tooltrail.collector.store.rows.CALL_FIELDS differs from the "
                       "tool_calls table")


class ShownCounts(NamedTuple):
    """A conversation's counts as its turns are shown (explicit calls merged)."""

    turns: int
    calls: int  # executed calls
    errors: int  # executed calls that failed


# Conversation ids → their counts as shown. What rows mean is composed above the store: the
# composition root hands the writer `collector.conversation_view.counts`.
CountShown = Callable[[Connection, Sequence[int]], Mapping[int, ShownCounts]]


class CountShownMissing(TypeError):
    """A write mixed explicit and traced turns in a conversation without `count_shown`."""


def insert_ignore(conn: Connection, table: Table) -> Insert:
    """INSERT … ON CONFLICT DO NOTHING for the connection's dialect."""
    if conn.dialect.name == "postgresql":
        return postgresql.insert(table).on_conflict_do_nothing()
    return sqlite.insert(table).on_conflict_do_nothing()


def _merged(a: TraceInfo, b: TraceInfo) -> TraceInfo:
    """Two requests' views of the same turn, folded into one."""
    best = b if b.key_rank > a.key_rank else a
    return TraceInfo(
        trace_id=a.trace_id,
        turn_key=a.turn_key,
        conversation_key=best.conversation_key,
        key_rank=best.key_rank,
        service=a.service or b.service,
        agents=a.agents | b.agents,
        start_ns=min(a.start_ns, b.start_ns),
        end_ns=max(a.end_ns, b.end_ns),
        has_agent_root=a.has_agent_root or b.has_agent_root,
        attributes={**b.attributes, **a.attributes},
        root_span_id=a.root_span_id or b.root_span_id,
        project=best.project,  # the project goes with the key
    )


def merge_traces(batches: Iterable[Batch | PreparedBatch]) -> dict[str, TraceInfo]:
    """Turn key → merged TraceInfo over every batch."""
    merged: dict[str, TraceInfo] = {}
    for batch in batches:
        for info in batch.traces:
            current = merged.get(info.turn_key)
            merged[info.turn_key] = info if current is None else _merged(current, info)
    return merged


COUNTER_DEFAULTS = {  # their column defaults (applied by SQLAlchemy, not the server)
    name: cast(ColumnDefault, conversations.c[name].default).arg for name in COUNTERS
}


def lookup(
    conn: Connection, table: str, key: str, columns: str, keys: Sequence[Any]
) -> list[Any]:
    """Rows (`columns`, comma-separated) of `table` whose `key` is in `keys`."""
    if not keys:
        return []
    found = metadata.tables[table]
    return list(conn.execute(
        select(*(found.c[name] for name in columns.split(", ")))
        .where(among(conn, found.c[key], keys))
    ))


def _insert_returning(conn: Connection, table: Table, rows: Sequence[dict[str, Any]],
                      returning: str) -> list[Any]:
    """INSERT `rows` (column → value, the same columns each; JSON as text) … ON CONFLICT DO
    NOTHING RETURNING `returning`: the rows this statement inserted (another writer's are
    skipped)."""
    columns = list(rows[0])
    names = ", ".join(columns)
    sql = (f"INSERT INTO {table.name} ({names}) SELECT {names} "
           f"FROM {json_rows(conn, table, columns)} "
           f"WHERE true ON CONFLICT DO NOTHING RETURNING {returning}")  # WHERE: SQLite's parser
    return list(conn.exec_driver_sql(sql, (dumps([list(r.values()) for r in rows]),)))


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
    rows = [{"project": i.project, "key": i.conversation_key, "service": i.service,
             "agents": dumps(sorted(i.agents)), "attributes": dumps(i.attributes),
             "first_seen": now, "last_seen": now, "start_ns": i.start_ns, "end_ns": i.end_ns,
             **COUNTER_DEFAULTS} for i in missing]
    found.update(((project, key), cid) for project, key, cid in
                 _insert_returning(conn, conversations, rows, "project, key, id"))
    late = {k: first[k] for k in first if k not in found}  # another writer's
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
    conn: Connection, batches: Sequence[Batch | PreparedBatch], now: float,
    count_shown: CountShown | None = None,
) -> None:
    """Store every turn, conversation and tool call of `batches` (caller owns the transaction;
    `count_shown`: see `recount_merged`)."""
    write_prepared(conn, [b if isinstance(b, PreparedBatch) else prepare(b) for b in batches], now,
                   count_shown)


def _json_list(value: Any) -> list[Any]:
    if isinstance(value, str | bytes):
        value = orjson.loads(value)
    return value if isinstance(value, list) else []


@dataclass(slots=True)
class Change:
    """What one group commit adds to one conversation."""

    turns: int = 0
    calls: int = 0
    errors: int = 0
    start_ns: int | None = None
    end_ns: int | None = None
    agents: set[str] = field(default_factory=set)

    def span(self, start_ns: int, end_ns: int, agents: Iterable[str]) -> None:
        """Account for one of the conversation's turns as it now stands."""
        self.start_ns = start_ns if self.start_ns is None else min(self.start_ns, start_ns)
        self.end_ns = end_ns if self.end_ns is None else max(self.end_ns, end_ns)
        self.agents.update(agents)


def write_prepared(conn: Connection, batches: Sequence[PreparedBatch], now: float,
                   count_shown: CountShown | None = None) -> None:
    """The SQL of one group commit (caller owns the transaction; `count_shown`: see
    `recount_merged`)."""
    infos = merge_traces(batches)
    if not infos:
        return
    existing = {
        row.turn_key: row
        for row in lookup(conn, "turns", "turn_key", "id, turn_key, conversation_id, key_rank, "
                          "start_ns, end_ns, agents, has_agent_root, root_span_id", list(infos))
    }
    # a trace already stored under a key at least as sure keeps it: a later request that
    # knows less (no key: the trace id) must not create a conversation of its own
    conv_ids = ensure_conversations(conn, [
        i for k, i in infos.items() if k not in existing or i.key_rank > existing[k].key_rank
    ], now)
    changes: dict[int, Change] = {cid: Change() for cid in conv_ids.values()}
    recount: set[int] = set()  # conversations a re-keyed turn left or joined
    orphans: set[int] = set()

    new_turns = [  # in key order, so that concurrent writers lock in the same order
        {"conversation_id": conv_ids[(i.project, i.conversation_key)], "turn_key": i.turn_key,
         "trace_id": i.trace_id, "start_ns": i.start_ns, "end_ns": i.end_ns,
         "key_rank": i.key_rank, "has_agent_root": i.has_agent_root,
         "agents": dumps(sorted(i.agents)), "root_span_id": i.root_span_id}
        for key, i in sorted(infos.items())
        if key not in existing
    ]
    turn_ids = insert_turns(conn, new_turns) if new_turns else {}
    for _, cid in turn_ids.values():
        changes.setdefault(cid, Change()).turns += 1
    turn_updates: list[dict[str, Any]] = []
    moved: list[dict[str, Any]] = []
    for key, row in existing.items():
        info = infos[key]
        target, rank = row.conversation_id, row.key_rank
        if info.key_rank > row.key_rank:
            target, rank = conv_ids[(info.project, info.conversation_key)], info.key_rank
            if target != row.conversation_id:
                orphans.add(row.conversation_id)
                recount.update((row.conversation_id, target))
                moved.append({"b_id": row.id, "b_conv": target})
        update_row = {
            "b_id": row.id,
            "b_conv": target,
            "b_rank": rank,
            "b_start": min(row.start_ns, info.start_ns),
            "b_end": max(row.end_ns, info.end_ns),
            "b_root": bool(row.has_agent_root or info.has_agent_root),
            "b_agents": sorted(set(_json_list(row.agents)) | info.agents),
            "b_span": row.root_span_id or info.root_span_id,
        }
        turn_ids[key] = (row.id, target)
        changes.setdefault(target, Change()).span(
            update_row["b_start"], update_row["b_end"], update_row["b_agents"])
        if (target, rank, update_row["b_start"], update_row["b_end"], update_row["b_root"],
                update_row["b_agents"], update_row["b_span"]) != (
                row.conversation_id, row.key_rank, row.start_ns, row.end_ns,
                bool(row.has_agent_root), _json_list(row.agents), row.root_span_id):
            turn_updates.append(update_row)
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
        archive.move(conn, moved)
    late = [key for key in infos if key not in turn_ids]  # inserted by another writer
    turn_ids.update((key, (tid, cid)) for key, tid, cid in lookup(
        conn, "turns", "turn_key", "turn_key, id, conversation_id", late))
    seen: dict[int, dict[str, Any]] = {}
    for key, info in infos.items():
        cid = turn_ids[key][1]
        change = changes.setdefault(cid, Change())
        if key not in existing:
            change.span(info.start_ns, info.end_ns, info.agents)
        seen[cid] = {**info.attributes, **seen.get(cid, {})}
        if info.service:
            seen[cid].setdefault("service.name", info.service)
    archive.insert(conn, [e for b in batches for e in b.archive], turn_ids)
    if not insert_calls(conn, batches, turn_ids, changes):
        recount.update(changes)  # a span was skipped: which conversation's is not known
    refresh_conversations(conn, set(changes), seen, now,
                          {cid: c for cid, c in changes.items() if cid not in recount},
                          count_shown)
    drop_empty(conn, orphans)


def insert_turns(
    conn: Connection, rows: Sequence[dict[str, Any] | tuple[Any, ...]]
) -> dict[str, tuple[int, int]]:
    """Insert new turns (column → value, or tuples in TURN_COLUMNS order; JSON as text),
    skipping any another writer just inserted: turn key → (id, conversation id) of the rows
    inserted."""
    named = [r if isinstance(r, dict) else dict(zip(TURN_COLUMNS, r, strict=True)) for r in rows]
    return {key: (tid, cid) for key, tid, cid in _insert_returning(
        conn, turns, named, "turn_key, id, conversation_id")}


def insert_calls(
    conn: Connection, batches: Sequence[PreparedBatch], turn_ids: dict[str, tuple[int, int]],
    changes: dict[int, Change],
) -> bool:
    """Bulk-insert every call row, skipping spans already stored, and count the executed calls
    and errors inserted into `changes`. False when spans were skipped but it is not known
    which (SQLite): their conversations must be recounted."""
    rows: list[tuple[Any, ...]] = []
    for batch in batches:
        for row in batch.calls:
            tid, cid = turn_ids[row[0]]
            rows.append((cid, tid, *row))
    if not rows:
        return True
    columns = ", ".join(CALL_COLUMNS)
    if conn.dialect.name == "postgresql":
        from psycopg.errors import UniqueViolation

        try:  # the common case, no span stored before: COPY straight into the table
            with conn.begin_nested():
                copy_rows(conn, "tool_calls", CALL_COLUMNS, rows)
            _count_calls(changes, ((r[0], r[2 + EXECUTED], r[2 + STATUS]) for r in rows))
            return True
        except (IntegrityError, UniqueViolation):  # a resend: stage, then skip stored spans
            pass
        types = ", ".join(f"{c.name} {pg_type(c)}" for c in tool_calls.c if c.name != "id")
        conn.exec_driver_sql(
            f"CREATE TEMP TABLE IF NOT EXISTS tooltrail_calls_in ({types}) ON COMMIT DELETE ROWS"
        )
        copy_rows(conn, "tooltrail_calls_in", CALL_COLUMNS, rows)
        _count_calls(changes, conn.exec_driver_sql(
            f"INSERT INTO tool_calls ({columns}) SELECT {columns} FROM tooltrail_calls_in "
            "ON CONFLICT DO NOTHING RETURNING conversation_id, executed, status"))
        return True
    marks = ", ".join("?" for _ in CALL_COLUMNS)
    inserted = conn.exec_driver_sql(
        f"INSERT INTO tool_calls ({columns}) VALUES ({marks}) ON CONFLICT DO NOTHING", rows
    ).rowcount
    if inserted != len(rows):
        return False
    _count_calls(changes, ((r[0], r[2 + EXECUTED], r[2 + STATUS]) for r in rows))
    return True


def _count_calls(changes: dict[int, Change], calls: Iterable[Any]) -> None:
    """Count (conversation id, executed, status) of inserted calls: executions only, since a
    request row and its execution are one call."""
    for cid, executed, status in calls:
        if executed:
            change = changes[cid]
            change.calls += 1
            change.errors += status == "error"


class ConversationsDeleted(Exception):
    """Conversations a write adds to were deleted since it looked them up (retention, DELETE):
    a serialization conflict (SQLSTATE 40001), so the request is retried, and the retry creates
    them afresh."""

    sqlstate = "40001"

    def __init__(self, ids: list[int]) -> None:
        super().__init__(f"conversations {ids} were deleted concurrently; retry")


def refresh_conversations(
    conn: Connection, ids: set[int], seen: dict[int, dict[str, Any]], now: float,
    changes: dict[int, Change] | None = None, count_shown: CountShown | None = None,
) -> None:
    """Bring the conversations `ids` up to date and mark them changed (for the worker): those
    with an entry in `changes` incrementally (stored counts, times and agents plus the
    change), the others recounted from their rows; newly `seen` attributes never overwrite.
    Those that mix explicit and traced turns are then counted by `count_shown`
    (`recount_merged`)."""
    if not ids:
        return
    changes = changes or {}
    id_list = sorted(ids)
    c, t = conversations.c, turns.c
    explicit = t.turn_key.startswith(POSITION_PREFIX, autoescape=True)
    query = (select(c.id, c.turn_count, c.call_count, c.error_count, c.start_ns, c.end_ns,
                    c.agents, c.attributes, c.service,
                    select(t.id).where(t.conversation_id == c.id, explicit).exists()
                    .label("explicit"),
                    select(t.id).where(t.conversation_id == c.id, ~explicit).exists()
                    .label("traced"))
             .where(among(conn, c.id, id_list)).order_by(c.id))
    if conn.dialect.name == "postgresql":
        # Lock the conversations (in id order) before reading them: a concurrent writer's
        # additions, or its recount, are then committed and read; its later ones come after.
        # NO KEY UPDATE: two refreshes exclude each other, but not the key-share locks that
        # inserting turns takes (turns' foreign key); FOR UPDATE would conflict with those,
        # and two groups that both added turns to one conversation would deadlock.
        query = query.with_for_update(key_share=True, of=conversations)
    stored = {row.id: row for row in conn.execute(query)}
    if len(stored) < len(id_list):  # its calls would be left without their conversation
        raise ConversationsDeleted(sorted(set(id_list) - set(stored)))
    recount = [cid for cid in id_list if cid not in changes]
    counted = _recounted(conn, recount) if recount else {}
    rows = []
    for cid in id_list:
        old = stored[cid]
        if cid in counted:
            n_turns, n_calls, n_errors, lo, hi, agents = counted[cid]
        else:
            change = changes[cid]
            n_turns = old.turn_count + change.turns
            n_calls = old.call_count + change.calls
            n_errors = old.error_count + change.errors
            first = old.turn_count == 0  # its stored times are no turn's yet
            lo = old.start_ns if change.start_ns is None else (
                change.start_ns if first else min(old.start_ns, change.start_ns))
            hi = old.end_ns if change.end_ns is None else (
                change.end_ns if first else max(old.end_ns, change.end_ns))
            agents = sorted(set(_json_list(old.agents)) | change.agents)
        attributes = {**seen.get(cid, {}), **(old.attributes or {})}
        rows.append({"id": cid, "turn_count": n_turns, "call_count": n_calls,
                     "error_count": n_errors, "start_ns": lo, "end_ns": hi, "last_seen": now,
                     "agents": dumps(agents), "attributes": dumps(attributes),
                     "service": old.service or attributes.get("service.name")})
    columns = list(rows[0])
    sets = ", ".join(f"{name} = r.{name}" for name in columns if name != "id")
    conn.exec_driver_sql(
        f"UPDATE conversations SET {sets}, change_seq = conversations.change_seq + 1 "
        f"FROM {json_rows(conn, conversations, columns)} WHERE conversations.id = r.id",
        (dumps([list(r.values()) for r in rows]),),
    )
    recount_merged(conn, [cid for cid in id_list if stored[cid].explicit and stored[cid].traced],
                   count_shown)


def _recounted(conn: Connection, ids: list[int]) -> dict[int, tuple[int, int, int, int, int,
                                                                    list[str]]]:
    """Conversation id → (turns, executed calls, errors, start, end, agents) from its rows."""
    turn_stats: dict[int, tuple[int, int, int]] = {}
    call_stats: dict[int, tuple[int, int]] = {}
    agents_by_conv: dict[int, set[str]] = {}
    t, k = turns.c, tool_calls.c
    for cid, n, lo, hi in conn.execute(
        select(t.conversation_id, func.count(), func.min(t.start_ns), func.max(t.end_ns))
        .where(among(conn, t.conversation_id, ids)).group_by(t.conversation_id)
    ):
        turn_stats[cid] = (n, lo, hi)
    for cid, n, errors in conn.execute(
        select(k.conversation_id, func.count(), func.sum((k.status == "error").cast(Integer)))
        # executions only: a request row and its execution are one call
        .where(among(conn, k.conversation_id, ids), k.executed).group_by(k.conversation_id)
    ):
        call_stats[cid] = (n, int(errors or 0))
    for cid, agents in conn.execute(
        select(t.conversation_id, t.agents).where(among(conn, t.conversation_id, ids))
    ):
        agents_by_conv.setdefault(cid, set()).update(_json_list(agents))
    found = {}
    for cid in ids:
        n_turns, lo, hi = turn_stats.get(cid, (0, 0, 0))
        n_calls, n_errors = call_stats.get(cid, (0, 0))
        found[cid] = (n_turns, n_calls, n_errors, lo or 0, hi or 0,
                      sorted(agents_by_conv.get(cid, set())))
    return found


def recount_merged(conn: Connection, mixed: Sequence[int],
                   count_shown: CountShown | None) -> None:
    """Count conversations that have explicit (positional) and traced turns as they are read:
    explicit calls merge into the traced turn at their position at read time
    (collector.capture.merge), so the row counts above count a merged call, and a merged turn,
    twice. Their counts come from `count_shown`, the reader REST uses (each merged turn once,
    each executed call once); a write that needs it and lacks it fails (`CountShownMissing`)
    rather than store counts REST contradicts. Conversations with turns of one kind only
    merge nothing: they keep the row counts, which are the same thing (and cost no read of
    their calls)."""
    if not mixed:
        return
    if count_shown is None:
        raise CountShownMissing(f"conversations {sorted(mixed)} mix explicit and traced turns: "
                                "their counts need count_shown")
    shown = count_shown(conn, sorted(mixed))
    rows = [{"b_id": cid, "b_turns": n.turns, "b_calls": n.calls, "b_errors": n.errors}
            for cid, n in sorted(shown.items())]
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
    gone = [cid for (cid,) in conn.execute(
        delete(conversations).where(among(conn, conversations.c.id, sorted(ids)), ~has_turn)
        .returning(conversations.c.id))]
    if gone:  # none expected (their turns' calls moved with the turns); no foreign key
        conn.execute(delete(tool_calls).where(among(conn, tool_calls.c.conversation_id, gone)))


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
