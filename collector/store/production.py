"""Production signals in the store: each logical turn's contribution and their hourly sums.

SQL only. What a turn contributes is composed above the store (`collector.production.signals`,
from the reconciled trajectories); `replace_turns` compares each turn's contribution with the
one kept in `signal_turns` and adds only the difference to `signal_buckets`. Queries read the
hourly buckets of the range asked, never the calls.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from sqlalchemy import Connection, bindparam, delete, func, select, tuple_

from tooltrail.collector.model import ToolCall
from tooltrail.collector.production.counts import Counts, TurnSignal
from tooltrail.collector.store.bulk import among, insert_rows
from tooltrail.collector.store.leases import TurnOrder, ordered_turns
from tooltrail.collector.store.persist import insert_ignore
from tooltrail.collector.store.tables import (
    SIGNAL_KEY,
    signal_buckets,
    signal_turns,
    tool_calls,
    turns,
)

HOUR = 3600
DAY = 24 * HOUR
VERSION_ATTRIBUTE = "service.version"
PENDING = "pending"  # the stored status of a call waiting for an approval
UNKNOWN = ""  # a turn with no service, version or agent is kept under the empty name

Key = tuple[str, str, str, str, int]  # SIGNAL_KEY: project, service, version, agent, bucket


@dataclass(frozen=True, slots=True)
class KeptTurn:
    """One row of signal_turns."""

    turn_id: int
    conversation_id: int
    key: Key
    signal: TurnSignal


class TurnMeta(NamedTuple):
    """What the signals of one stored turn read besides its calls."""

    start_ns: int
    agents: tuple[str, ...]
    pending: int  # its calls waiting for an approval (stored status `pending`)


def turn_meta(conn: Connection, ids: Sequence[int],
              calls: Mapping[int, Sequence[ToolCall]] | None = None
              ) -> tuple[TurnOrder, dict[int, TurnMeta]]:
    """The turns of conversations `ids` in start order, and each one's `TurnMeta` (`calls`:
    every stored call of these conversations by turn, already read; else their pending calls
    are read)."""
    pending: dict[int, int] = {}
    if calls is not None:
        for tid, turn_calls in calls.items():
            if n := sum(c.status == PENDING for c in turn_calls):
                pending[tid] = n
    else:
        k = tool_calls.c
        for tid, in conn.execute(
            select(k.turn_id).where(among(conn, k.conversation_id, list(ids)),
                                    k.status == PENDING)
        ):
            pending[tid] = pending.get(tid, 0) + 1
    order, values = ordered_turns(conn, ids, turns.c.start_ns, turns.c.agents)
    return order, {tid: TurnMeta(start or 0, tuple(agents or ()), pending.get(tid, 0))
                   for tid, (start, agents) in values.items()}


def replace_turns(conn: Connection, ids: Sequence[int], fresh: Sequence[KeptTurn]) -> None:
    """Keep `fresh` as the turn contributions of conversations `ids` (every one of their
    logical turns), and add the difference from what was kept to the buckets. Only the
    turns whose contribution changed are written: a conversation scored again as it grows
    rewrites its new turns, not its whole history (its rows are written in the worker's
    short locking transaction, on SQLite under the database's one write lock)."""
    fresh_ids = [t.turn_id for t in fresh]
    old = _kept(conn, sorted(ids), fresh_ids)
    by_id = {t.turn_id: t for t in fresh}
    same = {k.turn_id for k in old if by_id.get(k.turn_id) == k}
    old = [k for k in old if k.turn_id not in same]
    fresh = [t for t in fresh if t.turn_id not in same]
    deltas: dict[Key, Counts] = {}
    for kept, sign in [(k, -1) for k in old] + [(k, 1) for k in fresh]:
        counts = deltas.get(kept.key)
        if counts is None:
            counts = deltas[kept.key] = Counts()
        counts.add(kept.signal, sign)
    old_ids = [k.turn_id for k in old]
    if old_ids:
        conn.execute(delete(signal_turns).where(among(conn, signal_turns.c.turn_id, old_ids)))
    if fresh:
        insert_rows(conn, signal_turns, [_turn_row(k) for k in fresh])
    _apply(conn, {k: d for k, d in deltas.items() if _changes(d)})


def _changes(delta: Counts) -> bool:
    return bool(delta.turns or delta.zero_turns or delta.calls or delta.calls_sq or delta.failed
                or delta.unexecuted or delta.pending or delta.histogram or delta.tools)


def _kept(conn: Connection, ids: list[int], turn_ids: list[int]) -> list[KeptTurn]:
    """The kept rows of these conversations, and of these turns wherever they were kept (a
    re-keyed turn moves between conversations)."""
    s = signal_turns.c
    found: dict[int, KeptTurn] = {}
    wheres = [among(conn, s.conversation_id, ids)]
    if turn_ids:
        wheres.append(among(conn, s.turn_id, turn_ids))
    for where in wheres:
        for row in conn.execute(select(signal_turns).where(where)):
            found[row.turn_id] = KeptTurn(
                row.turn_id, row.conversation_id,
                (row.project, row.service, row.version, row.agent, row.bucket),
                TurnSignal(row.calls, row.failed, row.unexecuted, row.pending, row.tools or {}),
            )
    return list(found.values())


def _turn_row(kept: KeptTurn) -> dict[str, Any]:
    s = kept.signal
    return {"turn_id": kept.turn_id, "conversation_id": kept.conversation_id,
            **dict(zip(SIGNAL_KEY, kept.key, strict=True)), "calls": s.calls,
            "failed": s.failed, "unexecuted": s.unexecuted, "pending": s.pending,
            "tools": dict(s.tools)}


FIELDS = ("turns", "zero_turns", "calls", "calls_sq", "failed", "unexecuted", "pending")


def _counts(row: Any) -> Counts:
    return Counts(**{f: getattr(row, f) for f in FIELDS}, histogram=dict(row.histogram or {}),
                  tools=dict(row.tools or {}))


KEYS_PER_READ = 400  # bucket keys per SELECT (five bound values each)


def _apply(conn: Connection, deltas: dict[Key, Counts]) -> None:
    """Add each difference to its bucket. Buckets are created, then read and row-locked in key
    order (PostgreSQL), so that concurrent workers add, never overwrite, each other's
    differences; then written back in one executemany (and the emptied ones deleted in one)."""
    if not deltas:
        return
    keys = sorted(deltas)
    conn.execute(insert_ignore(conn, signal_buckets), [
        {**dict(zip(SIGNAL_KEY, key, strict=True)), **dict.fromkeys(FIELDS, 0),
         "histogram": {}, "tools": {}} for key in keys])
    b = signal_buckets.c
    columns = [b[name] for name in SIGNAL_KEY]
    found: dict[Key, Counts] = {}
    for start in range(0, len(keys), KEYS_PER_READ):
        query = (select(signal_buckets)
                 .where(tuple_(*columns).in_(keys[start:start + KEYS_PER_READ]))
                 .order_by(*columns))
        if conn.dialect.name == "postgresql":
            query = query.with_for_update()
        for row in conn.execute(query):
            found[(row.project, row.service, row.version, row.agent, row.bucket)] = _counts(row)
    where = [column == bindparam(f"k_{column.name}") for column in columns]
    updates: list[dict[str, Any]] = []
    emptied: list[dict[str, Any]] = []
    for key in keys:
        counts = found[key]
        counts.merge(deltas[key])
        named = {f"k_{name}": value for name, value in zip(SIGNAL_KEY, key, strict=True)}
        if counts.turns <= 0:
            emptied.append(named)
            continue
        updates.append({**named, **{f"v_{f}": getattr(counts, f) for f in FIELDS},
                        "v_histogram": counts.histogram, "v_tools": counts.tools})
    if emptied:
        conn.execute(delete(signal_buckets).where(*where), emptied)
    if updates:
        conn.execute(signal_buckets.update().where(*where).values(
            **{f: bindparam(f"v_{f}") for f in (*FIELDS, "histogram", "tools")}), updates)


@dataclass(frozen=True, slots=True)
class SignalRow:
    """The counts of one (project, service, version, agent) in one bucket."""

    project: str
    service: str
    version: str
    agent: str
    bucket: int  # unix seconds of the bucket's start
    counts: Counts


def buckets(
    conn: Connection,
    *,
    project: str | None = None,
    service: str | None = None,
    version: str | None = None,
    agent: str | None = None,
    since: float | None = None,
    until: float | None = None,
    width: int = HOUR,
) -> list[SignalRow]:
    """Counts per (project, service, version, agent) and bucket of `width` seconds (a
    multiple of an hour), oldest first; `since`/`until` select hours by their start."""
    b = signal_buckets.c
    query = select(signal_buckets)
    for column, value in ((b.project, project), (b.service, service), (b.version, version),
                          (b.agent, agent)):
        if value is not None:
            query = query.where(column == value)
    if since is not None:
        query = query.where(b.bucket >= int(since) // HOUR * HOUR)
    if until is not None:
        query = query.where(b.bucket < until)
    sums: dict[Key, Counts] = {}
    for row in conn.execute(query):
        key = (row.project, row.service, row.version, row.agent, row.bucket // width * width)
        sums.setdefault(key, Counts()).merge(_counts(row))
    return [SignalRow(*key, counts) for key, counts in sorted(sums.items(),
                                                               key=lambda kv: (kv[0][4], kv[0]))]


def totals(
    conn: Connection,
    *,
    project: str | None = None,
    service: str | None = None,
    agent: str | None = None,
    since: float | None = None,
    until: float | None = None,
) -> dict[tuple[str, str], Counts]:
    """Counts per (service, version) over the range (all agents unless one is named; every
    project unless one is named)."""
    out: dict[tuple[str, str], Counts] = {}
    for row in buckets(conn, project=project, service=service, agent=agent, since=since,
                       until=until, width=1 << 40):
        out.setdefault((row.service, row.version), Counts()).merge(row.counts)
    return out


def version_recency(
    conn: Connection, *, window: float, now: float | None = None
) -> dict[tuple[str, str], int]:
    """(service, version) → start of its newest bucket in the last `window` seconds."""
    since = (now if now is not None else time.time()) - window
    b = signal_buckets.c
    return {(svc, ver): last for svc, ver, last in conn.execute(
        select(b.service, b.version, func.max(b.bucket))
        .where(b.bucket >= int(since) // HOUR * HOUR).group_by(b.service, b.version))}


def latest_versions(
    conn: Connection, *, window: float, cap: int, now: float | None = None
) -> dict[tuple[str, str], Counts]:
    """Counts per (service, version) over the last `window` seconds, keeping per service only
    the `cap` versions seen most recently (the gauges' label cardinality bound)."""
    now = now if now is not None else time.time()
    per_service: dict[str, list[tuple[int, str]]] = {}
    for (svc, ver), last in version_recency(conn, window=window, now=now).items():
        per_service.setdefault(svc, []).append((last, ver))
    keep = {(svc, ver) for svc, seen in per_service.items()
            for _, ver in sorted(seen, key=lambda lv: (-lv[0], lv[1]))[:cap]}
    return {k: v for k, v in totals(conn, since=now - window).items() if k in keep}


def turn_roots(conn: Connection, ids: Sequence[int]
               ) -> tuple[TurnOrder, dict[int, tuple[str, str | None]]]:
    """The turns of conversations `ids` in start order, and each one's (trace id, root span
    id)."""
    order, roots = ordered_turns(conn, ids, turns.c.trace_id, turns.c.root_span_id)
    return order, {tid: (trace_id, root) for tid, (trace_id, root) in roots.items()}


def version_conversations(conn: Connection, project: str, service: str, version: str,
                          limit: int) -> list[int]:
    """The newest `limit` conversation ids with a turn recorded under (service, version)."""
    t = signal_turns.c
    return [cid for (cid,) in conn.execute(
        select(t.conversation_id).where(t.project == project, t.service == service,
                                        t.version == version)
        .group_by(t.conversation_id).order_by(t.conversation_id.desc()).limit(limit))]
