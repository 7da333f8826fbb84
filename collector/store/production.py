"""Production signals in the store: each logical turn's contribution and their hourly sums.

The worker calls `record` for the conversations it has just claimed (settled and changed), in
its scoring transaction: their turns are read once through the scoring side's reconciled
trajectories (`collector.scorer.trajectories`: each call once, explicit and traced merged; the
ones scoring read, else read without results, whose values no count needs),
each turn's contribution is compared with the one kept in `signal_turns`, and only the
difference is added to `signal_buckets`. Queries read the hourly buckets of the range asked,
never the calls.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, bindparam, delete, func, select, tuple_

from collector.capture.merge import logical_turns
from collector.production.counts import Counts, TurnSignal
from collector.production.evaluation import Verdict
from collector.scorer import NOT_EXECUTED, Scored, trajectories
from collector.store.bulk import among
from collector.store.leases import ConversationFacts, scope_key
from collector.store.persist import insert_ignore
from collector.store.tables import (
    SIGNAL_KEY,
    signal_buckets,
    signal_turns,
    tool_calls,
    turns,
)
from matcher import Trajectory

HOUR = 3600
DAY = 24 * HOUR
VERSION_ATTRIBUTE = "service.version"
UNKNOWN = ""  # a turn with no service, version or agent is kept under the empty name

Key = tuple[str, str, str, str, int]  # SIGNAL_KEY: project, service, version, agent, bucket


@dataclass(frozen=True, slots=True)
class KeptTurn:
    """One row of signal_turns."""

    turn_id: int
    conversation_id: int
    key: Key
    signal: TurnSignal


def record(conn: Connection, facts: Sequence[ConversationFacts],
           paths: Mapping[int, Trajectory] | None = None) -> None:
    """Bring the signals of these conversations up to date with their stored turns and calls
    (`paths`: trajectories the caller has read already, of some or all of them; the others
    are read without their results, which signals never look at)."""
    if not facts:
        return
    ids = sorted(f.id for f in facts)
    missing = [cid for cid in ids if paths is None or cid not in paths]
    if missing:
        paths = {**(paths or {}), **trajectories(conn, missing, results=False)}
    assert paths is not None
    fresh = list(_turn_signals(conn, facts, paths))
    fresh_ids = [t.turn_id for t in fresh]
    old = _kept(conn, ids, fresh_ids)
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
        conn.execute(signal_turns.insert(), [_turn_row(k) for k in fresh])
    _apply(conn, {k: d for k, d in deltas.items() if _changes(d)})


def _changes(delta: Counts) -> bool:
    return bool(delta.turns or delta.zero_turns or delta.calls or delta.calls_sq or delta.failed
                or delta.unexecuted or delta.pending or delta.histogram or delta.tools)


def _turn_signals(conn: Connection, facts: Sequence[ConversationFacts],
                  paths: Mapping[int, Trajectory]) -> Iterable[KeptTurn]:
    """Each logical turn with its key and signal (turns in start order, as scored)."""
    ids = sorted(f.id for f in facts)
    order: dict[int, list[tuple[int, str]]] = {cid: [] for cid in ids}
    meta: dict[int, tuple[int, tuple[str, ...]]] = {}
    t = turns.c
    for cid, tid, key, start, agents in conn.execute(
        select(t.conversation_id, t.id, t.turn_key, t.start_ns, t.agents)
        .where(among(conn, t.conversation_id, ids))
        .order_by(t.conversation_id, t.start_ns, t.id)
    ):
        order[cid].append((tid, key))
        meta[tid] = (start or 0, tuple(agents or ()))
    pending: dict[int, int] = {}
    k = tool_calls.c
    for tid, in conn.execute(
        select(k.turn_id).where(among(conn, k.conversation_id, ids), k.status == "pending")
    ):
        pending[tid] = pending.get(tid, 0) + 1
    names: dict[tuple[str, ...], str] = {}  # a turn's agents → the key's agent (few distinct)
    for f in facts:
        cid, service = f.id, f.service or UNKNOWN
        version = f.attributes.get(VERSION_ATTRIBUTE)
        version = str(version) if version is not None else UNKNOWN
        for (stored, explicit), calls in zip(
            logical_turns(order[cid]), paths[cid].turns, strict=True
        ):
            if stored is None or explicit is None:
                first = stored if stored is not None else explicit
                assert first is not None
                start, agents = meta[first]
                waiting = pending.get(first, 0)
            else:
                first = stored
                (start_a, agents_a), (start_b, agents_b) = meta[stored], meta[explicit]
                start, agents = min(start_a, start_b), agents_a + agents_b
                waiting = pending.get(stored, 0) + pending.get(explicit, 0)
            agent = names.get(agents)
            if agent is None:
                agent = names[agents] = ",".join(sorted(set(agents)))
            tools: dict[str, int] = {}
            failed = unexecuted = 0
            for call in calls:
                tools[call.name] = tools.get(call.name, 0) + 1
                if call.error is not None:
                    if call.error == NOT_EXECUTED:
                        unexecuted += 1
                    else:
                        failed += 1
            signal = TurnSignal(len(calls), failed, unexecuted, waiting, tools)
            yield KeptTurn(first, cid, (f.project, service, version, agent,
                                        start // 1_000_000_000 // HOUR * HOUR), signal)


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


def verdicts(conn: Connection, scored: Sequence[Scored]) -> list[Verdict]:
    """The results of `scored` as exportable verdicts, each with the root span of the turn it
    judges: turn `i` for a per-turn result, the conversation's last turn with a known root
    otherwise."""
    ids = sorted({s.conversation.id for s in scored})
    order: dict[int, list[tuple[int, str]]] = {cid: [] for cid in ids}
    roots: dict[int, tuple[str, str | None]] = {}
    t = turns.c
    for cid, tid, key, trace_id, root in conn.execute(
        select(t.conversation_id, t.id, t.turn_key, t.trace_id, t.root_span_id)
        .where(among(conn, t.conversation_id, ids)).order_by(t.conversation_id, t.start_ns, t.id)
    ):
        order[cid].append((tid, key))
        roots[tid] = (trace_id, root)
    spans: dict[int, list[tuple[str, str] | None]] = {}
    for cid in ids:
        per_turn: list[tuple[str, str] | None] = []
        for stored, explicit in logical_turns(order[cid]):
            found = [roots[tid] for tid in (stored, explicit) if tid is not None]
            per_turn.append(next(((tr, sp) for tr, sp in found if sp), None))
        spans[cid] = per_turn
    out: list[Verdict] = []
    for s in scored:
        per_turn = spans.get(s.conversation.id, [])
        for result in s.results:
            index = result.scope.get("turn") if result.scope.get("kind") == "turn" else None
            if isinstance(index, int) and 0 <= index < len(per_turn):
                parent = per_turn[index]
            else:
                parent = next((p for p in reversed(per_turn) if p), None)
            out.append(Verdict(
                expectation=s.expectation.slug, expectation_version=s.expectation.version,
                conversation=s.conversation.key, passed=result.passed, score=result.score,
                reason=result.reason, scope=scope_key(result.scope),
                trace_id=parent[0] if parent else None, span_id=parent[1] if parent else None))
    return out
