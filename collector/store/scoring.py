"""The worker's side of the store: claiming work, loading trajectories, writing results."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, and_, func, or_, select, update

from collector.store.tables import conversations, expectations, jobs, results, tool_calls, turns
from matcher import Call, Expectation, Result, Trajectory, parse_expectation


@dataclass(frozen=True, slots=True)
class ConversationFacts:
    """What selectors and results need to know about one conversation."""

    id: int
    key: str
    service: str | None
    agents: tuple[str, ...]
    attributes: dict[str, Any]
    change_seq: int


@dataclass(frozen=True, slots=True)
class ActiveExpectation:
    """The newest active version of one expectation, parsed."""

    slug: str
    version: int
    expectation: Expectation


def claim_dirty(
    conn: Connection, *, now: float, settle: float, lease: float, limit: int, owner: str
) -> list[tuple[int, int]]:
    """Lease up to `limit` settled conversations that changed since scored: [(id, change_seq)]."""
    c = conversations.c
    ready = (
        select(c.id)
        .where(
            c.scored_seq < c.change_seq,
            c.last_seen <= now - settle,
            or_(c.lease_until.is_(None), c.lease_until < now),
        )
        .order_by(c.last_seen)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    claimed = conn.execute(
        update(conversations)
        .where(c.id.in_(ready.scalar_subquery()))
        .values(lease_until=now + lease, lease_owner=owner)
        .returning(c.id, c.change_seq)
    )
    return [(cid, seq) for cid, seq in claimed]


def release(conn: Connection, conversation_id: int, owner: str, scored_seq: int) -> bool:
    """Mark a leased conversation scored up to `scored_seq`; False when the lease was lost."""
    c = conversations.c
    done = conn.execute(
        update(conversations)
        .where(c.id == conversation_id, c.lease_owner == owner)
        .values(scored_seq=scored_seq, lease_until=None, lease_owner=None)
    )
    return done.rowcount == 1


def active_expectations(conn: Connection) -> list[ActiveExpectation]:
    """The newest version of every active expectation."""
    e = expectations.c
    newest = (
        select(e.slug, func.max(e.version).label("version")).where(e.active).group_by(e.slug)
    ).subquery()
    rows = conn.execute(
        select(e.slug, e.version, e.body).join(
            newest, and_(e.slug == newest.c.slug, e.version == newest.c.version)
        )
    )
    return [ActiveExpectation(s, v, parse_expectation(body)) for s, v, body in rows]


def expectation_version(conn: Connection, slug: str, version: int) -> ActiveExpectation | None:
    """One stored version, if it exists and its expectation is still active."""
    e = expectations.c
    row = conn.execute(
        select(e.body).where(e.slug == slug, e.version == version, e.active)
    ).first()
    return None if row is None else ActiveExpectation(slug, version, parse_expectation(row.body))


def conversation_facts(conn: Connection, ids: Sequence[int]) -> list[ConversationFacts]:
    """Selector-relevant facts of the given conversations, in id order."""
    c = conversations.c
    rows = conn.execute(
        select(c.id, c.key, c.service, c.agents, c.attributes, c.change_seq)
        .where(c.id.in_(list(ids))).order_by(c.id)
    )
    return [
        ConversationFacts(r.id, r.key, r.service, tuple(r.agents or ()), r.attributes or {},
                          r.change_seq)
        for r in rows
    ]


def applies(exp: Expectation, conv: ConversationFacts) -> bool:
    """Whether an expectation's selector picks this conversation."""
    return exp.selector.matches(
        conversation=conv.key, service=conv.service, agents=conv.agents,
        attributes=conv.attributes,
    )


def trajectory(conn: Connection, conversation_id: int) -> Trajectory:
    """The conversation's calls, grouped by turn (turn start order), each turn by (step, start)."""
    turn_ids = [
        tid for (tid,) in conn.execute(
            select(turns.c.id).where(turns.c.conversation_id == conversation_id)
            .order_by(turns.c.start_ns, turns.c.id)
        )
    ]
    t = tool_calls.c
    by_turn: dict[int, list[Call]] = {tid: [] for tid in turn_ids}
    rows = conn.execute(
        select(t.turn_id, t.name, t.arguments, t.arguments_raw, t.result, t.error, t.call_id,
               t.step)
        .where(t.conversation_id == conversation_id)
        .order_by(t.turn_id, t.step.is_(None), t.step, t.start_ns, t.span_id)
    )
    for r in rows:
        arguments = r.arguments if r.arguments is not None else (r.arguments_raw or {})
        by_turn.setdefault(r.turn_id, []).append(
            Call(name=r.name, arguments=arguments, result=r.result, error=r.error,
                 call_id=r.call_id, step=r.step)
        )
    return Trajectory(turns=[by_turn[tid] for tid in turn_ids])


def scope_key(scope: dict[str, Any]) -> str:
    """A result scope as stored: `conversation` or `turn:<i>`."""
    return f"turn:{scope['turn']}" if scope.get("kind") == "turn" else "conversation"


def already_scored(conn: Connection, conv: ConversationFacts, exp: ActiveExpectation) -> bool:
    """True when a current result exists for this trajectory and expectation version."""
    r = results.c
    row = conn.execute(
        select(r.id).where(
            r.conversation_id == conv.id, r.expectation == exp.slug,
            r.expectation_version == exp.version, r.change_seq == conv.change_seq, r.current,
        ).limit(1)
    ).first()
    return row is not None


def store_results(
    conn: Connection, conv: ConversationFacts, exp: ActiveExpectation,
    scored: Iterable[Result], now: float,
) -> int:
    """Supersede the previous results of (conversation, expectation) and insert the new ones."""
    r = results.c
    conn.execute(
        update(results).where(r.conversation_id == conv.id, r.expectation == exp.slug, r.current)
        .values(current=False)
    )
    rows = []
    for result in scored:
        detail = result.to_dict()
        rows.append({
            "conversation_id": conv.id, "expectation": exp.slug,
            "expectation_version": exp.version, "scope": scope_key(detail["scope"]),
            "change_seq": conv.change_seq, "current": True, "passed": result.passed,
            "score": result.score, "precision": result.precision, "recall": result.recall,
            "f1": result.f1, "detail": detail, "scored_at": now,
        })
    if rows:
        conn.execute(results.insert(), rows)
    return len(rows)


def claim_job(conn: Connection, *, now: float, lease: float) -> dict[str, Any] | None:
    """Lease one queued or running job whose lease is free."""
    j = jobs.c
    candidate = (
        select(j.id).where(j.status.in_(("queued", "running")),
                           or_(j.lease_until.is_(None), j.lease_until < now))
        .order_by(j.id).limit(1).with_for_update(skip_locked=True)
    )
    row = conn.execute(
        update(jobs).where(j.id.in_(candidate.scalar_subquery()))
        .values(status="running", lease_until=now + lease, updated_at=now)
        .returning(j.id, j.expectation, j.expectation_version, j.cursor)
    ).first()
    return None if row is None else dict(row._mapping)


def job_chunk(conn: Connection, cursor: int, limit: int) -> list[int]:
    """The next conversation ids after `cursor`."""
    c = conversations.c
    return [cid for (cid,) in conn.execute(
        select(c.id).where(c.id > cursor).order_by(c.id).limit(limit)
    )]


def advance_job(
    conn: Connection, job_id: int, *, cursor: int, done: int, failed: int, finished: bool,
    now: float,
) -> None:
    """Record a chunk's progress and release the job's lease."""
    j = jobs.c
    conn.execute(
        update(jobs).where(j.id == job_id, j.status == "running").values(
            cursor=cursor, done=j.done + done, failed=j.failed + failed,
            status="done" if finished else "running", lease_until=None, updated_at=now,
        )
    )
