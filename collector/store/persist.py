"""Writing extracted batches in one transaction, set-based, idempotent on (trace_id, span_id)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Insert, Integer, Table, bindparam, delete, func, select, update
from sqlalchemy.dialects import postgresql, sqlite

from collector.model import Batch, TraceInfo
from collector.store.tables import conversations, ingest_errors, tool_calls, turns


def insert_ignore(conn: Connection, table: Table) -> Insert:
    """INSERT … ON CONFLICT DO NOTHING for the connection's dialect."""
    if conn.dialect.name == "postgresql":
        return postgresql.insert(table).on_conflict_do_nothing()
    return sqlite.insert(table).on_conflict_do_nothing()


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
        )


def merge_traces(batches: Iterable[Batch]) -> dict[str, TraceInfo]:
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


def ensure_conversations(
    conn: Connection, infos: Sequence[TraceInfo], now: float
) -> dict[str, int]:
    """Conversation key → id, creating missing conversations."""
    keys = sorted({i.conversation_key for i in infos})
    if not keys:
        return {}
    rows = [
        {
            "key": i.conversation_key,
            "service": i.service,
            "agents": sorted(i.agents),
            "attributes": i.attributes,
            "first_seen": now,
            "last_seen": now,
            "start_ns": i.start_ns,
            "end_ns": i.end_ns,
        }
        for i in {i.conversation_key: i for i in infos}.values()
    ]
    conn.execute(insert_ignore(conn, conversations), rows)
    found = conn.execute(
        select(conversations.c.key, conversations.c.id).where(conversations.c.key.in_(keys))
    )
    return {key: cid for key, cid in found}


def write_batches(conn: Connection, batches: Sequence[Batch], now: float) -> None:
    """Store every turn, conversation and tool call of `batches` (caller owns the transaction)."""
    infos = merge_traces(batches)
    if not infos:
        return
    existing = {
        row.turn_key: row
        for row in conn.execute(
            select(
                turns.c.id,
                turns.c.turn_key,
                turns.c.conversation_id,
                turns.c.key_rank,
                turns.c.start_ns,
                turns.c.end_ns,
                turns.c.agents,
                turns.c.has_agent_root,
            ).where(turns.c.turn_key.in_(list(infos)))
        )
    }
    conv_ids = ensure_conversations(conn, list(infos.values()), now)
    touched: set[int] = set(conv_ids.values())
    orphans: set[int] = set()

    new_turns = [
        {
            "conversation_id": conv_ids[i.conversation_key],
            "turn_key": i.turn_key,
            "trace_id": i.trace_id,
            "start_ns": i.start_ns,
            "end_ns": i.end_ns,
            "key_rank": i.key_rank,
            "has_agent_root": i.has_agent_root,
            "agents": sorted(i.agents),
        }
        for key, i in infos.items()
        if key not in existing
    ]
    if new_turns:
        conn.execute(insert_ignore(conn, turns), new_turns)
    turn_updates: list[dict[str, Any]] = []
    for key, row in existing.items():
        info = infos[key]
        target = row.conversation_id
        rank = row.key_rank
        if info.key_rank > row.key_rank:
            target, rank = conv_ids[info.conversation_key], info.key_rank
            if target != row.conversation_id:
                orphans.add(row.conversation_id)
                touched.add(row.conversation_id)
        agents = sorted(set(row.agents or []) | info.agents)
        turn_updates.append(
            {
                "b_id": row.id,
                "b_conv": target,
                "b_rank": rank,
                "b_start": min(row.start_ns, info.start_ns),
                "b_end": max(row.end_ns, info.end_ns),
                "b_root": row.has_agent_root or info.has_agent_root,
                "b_agents": agents,
            }
        )
    if turn_updates:
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
            ),
            turn_updates,
        )
        conn.execute(
            update(tool_calls)
            .where(tool_calls.c.turn_id == bindparam("b_id"))
            .values(conversation_id=bindparam("b_conv")),
            [{"b_id": u["b_id"], "b_conv": u["b_conv"]} for u in turn_updates],
        )
    turn_ids = {
        key: (tid, cid)
        for key, tid, cid in conn.execute(
            select(turns.c.turn_key, turns.c.id, turns.c.conversation_id).where(
                turns.c.turn_key.in_(list(infos))
            )
        )
    }
    call_rows = [
        {
            "conversation_id": turn_ids[c.trace_id][1],
            "turn_id": turn_ids[c.trace_id][0],
            "trace_id": c.trace_id,
            "span_id": c.span_id,
            "parent_span_id": c.parent_span_id,
            "call_id": c.call_id,
            "name": c.name,
            "arguments": c.arguments,
            "arguments_raw": c.arguments_raw,
            "result": c.result,
            "error": c.error,
            "status": c.status,
            "start_ns": c.start_ns,
            "end_ns": c.end_ns,
            "step": c.step,
            "convention": c.convention,
            "executed": c.executed,
            "attributes": c.attributes,
        }
        for batch in batches
        for c in batch.calls
    ]
    if call_rows:
        conn.execute(insert_ignore(conn, tool_calls), call_rows)
    touched |= {cid for _, cid in turn_ids.values()}
    seen: dict[int, dict[str, Any]] = {}
    for info in infos.values():
        cid = turn_ids[info.turn_key][1]
        seen[cid] = {**info.attributes, **seen.get(cid, {})}
        if info.service:
            seen[cid].setdefault("service.name", info.service)
    refresh_conversations(conn, touched, seen, now)
    drop_empty(conn, orphans)


def refresh_conversations(
    conn: Connection, ids: set[int], seen: dict[int, dict[str, Any]], now: float
) -> None:
    """Recount, re-time and mark changed (for the worker) every touched conversation."""
    if not ids:
        return
    id_list = sorted(ids)
    stored = {
        cid: (attributes or {}, service)
        for cid, attributes, service in conn.execute(
            select(conversations.c.id, conversations.c.attributes, conversations.c.service).where(
                conversations.c.id.in_(id_list)
            )
        )
    }
    turn_stats = {
        cid: (n, lo, hi)
        for cid, n, lo, hi in conn.execute(
            select(
                turns.c.conversation_id,
                func.count(),
                func.min(turns.c.start_ns),
                func.max(turns.c.end_ns),
            )
            .where(turns.c.conversation_id.in_(id_list))
            .group_by(turns.c.conversation_id)
        )
    }
    call_stats = {
        cid: (n, errors or 0)
        for cid, n, errors in conn.execute(
            select(
                tool_calls.c.conversation_id,
                func.count(),
                func.sum((tool_calls.c.status == "error").cast(Integer)),
            )
            .where(tool_calls.c.conversation_id.in_(id_list))
            .group_by(tool_calls.c.conversation_id)
        )
    }
    agents_by_conv: dict[int, set[str]] = {}
    for cid, agents in conn.execute(
        select(turns.c.conversation_id, turns.c.agents).where(turns.c.conversation_id.in_(id_list))
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


def drop_empty(conn: Connection, ids: set[int]) -> None:
    """Delete conversations left with no turn (a trace re-keyed to its real conversation)."""
    if not ids:
        return
    has_turn = select(turns.c.id).where(turns.c.conversation_id == conversations.c.id).exists()
    conn.execute(delete(conversations).where(conversations.c.id.in_(sorted(ids)), ~has_turn))


def record_ingest_errors(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Keep rejected requests and spans, with their reasons, for /api/v1/ingest/errors."""
    if rows:
        conn.execute(ingest_errors.insert(), list(rows))
