"""The worker's side of the store: leases, stored calls and results, in bulk. Pure SQL: what
the rows mean to the matcher is composed in `collector.scorer`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    Connection,
    Select,
    and_,
    bindparam,
    func,
    null,
    or_,
    select,
    text,
    update,
)

from tooltrail.collector.model import UNREAD, ToolCall
from tooltrail.collector.store.bulk import among, insert_rows
from tooltrail.collector.store.tables import (
    conversations,
    expectations,
    result_tools,
    results,
    tool_calls,
    turns,
)
from tooltrail.collector.store.verdicts import active_versions


@dataclass(frozen=True, slots=True)
class ConversationFacts:
    """What selectors and results need to know about one conversation."""

    id: int
    key: str
    service: str | None
    agents: tuple[str, ...]
    attributes: dict[str, Any]
    change_seq: int
    last_seen: float
    project: str


def claim_dirty(
    conn: Connection, *, now: float, settle: float, lease: float, limit: int, owner: str
) -> list[int]:
    """Lease up to `limit` settled conversations that changed since they were scored."""
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
        .returning(c.id)
    )
    return sorted(cid for (cid,) in claimed)


def backlog(conn: Connection) -> int:
    """Conversations that changed since they were last scored (settled or not yet)."""
    c = conversations.c
    return int(conn.execute(
        select(func.count()).select_from(conversations).where(c.scored_seq < c.change_seq)
    ).scalar_one())


def lock_free(conn: Connection, ids: Sequence[int], *, now: float) -> list[ConversationFacts]:
    """Row-lock, until this transaction ends, those of `ids` that no one leases or locks; their
    facts, in id order. A rescoring chunk scores them in the same transaction, so it needs no
    lease of its own (and writes no lease rows); settle-scoring skips them meanwhile."""
    if not ids:
        return []
    c = conversations.c
    rows = conn.execute(
        _facts_query()
        .where(among(conn, c.id, ids), or_(c.lease_until.is_(None), c.lease_until < now))
        .with_for_update(skip_locked=True)
    )
    return [_facts(r) for r in rows]


def mark_scored(conn: Connection, facts: Sequence[ConversationFacts]) -> None:
    """Mark conversations scored up to the change_seq whose trajectory was scored (the one in
    their facts), never the live one: on SQLite a reader holds no row lock, and spans committed
    after the facts were read must still be scored. Rows marked already are not rewritten."""
    pairs = sorted({(f.id, f.change_seq) for f in facts})
    if not pairs:
        return
    if conn.dialect.name == "postgresql":
        conn.execute(
            text(
                "UPDATE conversations SET scored_seq = v.seq"
                " FROM unnest(CAST(:ids AS bigint[]), CAST(:seqs AS bigint[])) AS v(id, seq)"
                " WHERE conversations.id = v.id AND conversations.scored_seq < v.seq"
            ),
            {"ids": [i for i, _ in pairs], "seqs": [q for _, q in pairs]},
        )
        return
    c = conversations.c
    conn.execute(
        update(conversations)
        .where(c.id == bindparam("b_id"), c.scored_seq < bindparam("b_seq"))
        .values(scored_seq=bindparam("b_seq")),
        [{"b_id": i, "b_seq": q} for i, q in pairs],
    )


def still_owned(conn: Connection, ids: Sequence[int], owner: str, *, now: float) -> set[int]:
    """Lock and return those of `ids` whose lease we still hold at `now` (a slow worker may
    lose it): unexpired, it has kept every other worker and rescoring chunk off them since
    it was taken, and the lock keeps them off until this transaction ends.

    NO KEY UPDATE, as the writer's refresh takes: a FOR UPDATE lock would also make the
    writer's turn inserts into these conversations (their foreign key's key-share lock) wait
    for this transaction."""
    if not ids:
        return set()
    c = conversations.c
    rows = conn.execute(
        select(c.id)
        .where(among(conn, c.id, ids), c.lease_owner == owner, c.lease_until >= now)
        .order_by(c.id)
        .with_for_update(key_share=True)
    )
    return {cid for (cid,) in rows}


def release(
    conn: Connection,
    owner: str,
    ids: Iterable[int],
    scored: Sequence[ConversationFacts] = (),
) -> None:
    """Give up our leases; the `scored` conversations are also marked scored (`mark_scored`).
    Called while this transaction holds their row locks (`still_owned`)."""
    mark_scored(conn, scored)
    id_list = sorted(ids)
    if id_list:
        c = conversations.c
        conn.execute(
            update(conversations)
            .where(among(conn, c.id, id_list), c.lease_owner == owner)
            .values(lease_until=None, lease_owner=None)
        )


def active_bodies(conn: Connection) -> list[tuple[str, int, Any, str]]:
    """(slug, version, body, project) of the active version of every active expectation
    (`verdicts.active_versions`)."""
    e = expectations.c
    newest = active_versions().subquery()
    rows = conn.execute(
        select(e.slug, e.version, e.body, e.project)
        .join(newest, and_(e.slug == newest.c.slug, e.version == newest.c.version))
        .where(e.active)
    )
    return [(slug, version, body, project) for slug, version, body, project in rows]


def _facts_query() -> Select[Any]:
    c = conversations.c
    return select(
        c.id, c.key, c.service, c.agents, c.attributes, c.change_seq, c.last_seen, c.project
    ).order_by(c.id)


def _facts(r: Any) -> ConversationFacts:
    return ConversationFacts(
        r.id, r.key, r.service, tuple(r.agents or ()), r.attributes or {}, r.change_seq,
        r.last_seen, r.project,
    )


def facts_upto(
    conn: Connection, limit: int, project: str | None = None
) -> list[ConversationFacts] | None:
    """The facts of every stored conversation (of `project`), or None when there are more
    than `limit`."""
    query = _facts_query() if project is None else _facts_query().where(
        conversations.c.project == project)
    rows = conn.execute(query.limit(limit + 1)).all()
    return None if len(rows) > limit else [_facts(r) for r in rows]


def conversation_facts(conn: Connection, ids: Sequence[int]) -> list[ConversationFacts]:
    """Selector-relevant facts of the given conversations, in id order."""
    rows = conn.execute(_facts_query().where(among(conn, conversations.c.id, ids)))
    return [_facts(r) for r in rows]


TurnOrder = dict[int, list[tuple[int, str]]]  # conversation → its (turn id, turn key)s


# A result that is there, read without its value (`trajectory_rows(results=False)`).
RESULT_PRESENT = True


def _result_present(conn: Connection) -> Any:
    """Whether a call has a result, neither SQL NULL nor JSON `null` (which decodes to None)."""
    if conn.dialect.name == "postgresql":
        return text("tool_calls.result IS NOT NULL AND jsonb_typeof(tool_calls.result) <> 'null'")
    return text("tool_calls.result IS NOT NULL AND json_type(tool_calls.result) <> 'null'")


def trajectory_rows(
    conn: Connection, ids: Sequence[int], *, results: bool = True
) -> tuple[TurnOrder, dict[int, list[ToolCall]]]:
    """The stored turns of conversations `ids` in start order, and each turn's calls as
    stored. Two queries for any number of conversations. Without `results`, a call's result
    is `RESULT_PRESENT` or None, never read nor decoded: reconciliation only asks whether
    there is one."""
    turn_order, _ = ordered_turns(conn, ids)
    return turn_order, trajectory_calls(conn, ids, results=results)


def ordered_turns(conn: Connection, ids: Sequence[int], *columns: Any
                  ) -> tuple[TurnOrder, dict[int, tuple[Any, ...]]]:
    """The turns of conversations `ids` in start order, and each turn's values of `columns`
    (of the `turns` table) by turn id."""
    order: TurnOrder = {cid: [] for cid in ids}
    values: dict[int, tuple[Any, ...]] = {}
    t = turns.c
    for cid, tid, key, *rest in conn.execute(
        select(t.conversation_id, t.id, t.turn_key, *columns)
        .where(among(conn, t.conversation_id, list(ids)))
        .order_by(t.conversation_id, t.start_ns, t.id)
    ):
        order[cid].append((tid, key))
        values[tid] = tuple(rest)
    return order, values


def trajectory_calls(
    conn: Connection, ids: Sequence[int], *, results: bool = True, arguments: bool = True
) -> dict[int, list[ToolCall]]:
    """`trajectory_rows` without the turns: each turn's calls as stored. Without `arguments`,
    a call's arguments are `UNREAD` (reconciliation raises where it would look at them) and
    its raw arguments None: neither is read nor decoded."""
    id_list = list(ids)
    t = tool_calls.c
    rows = conn.execute(
        select(
            t.turn_id,
            t.trace_id,
            t.span_id,
            t.parent_span_id,
            t.name,
            t.call_id,
            *((t.arguments, t.arguments_raw) if arguments else (null(), null())),
            t.result if results else _result_present(conn),
            t.error,
            t.status,
            t.start_ns,
            t.end_ns,
            t.convention,
            t.step,
            t.executed,
        ).where(among(conn, t.conversation_id, id_list))
    ).all()
    unread = not arguments
    per_turn: dict[int, list[ToolCall]] = {}
    # positional construction from unpacked rows: this loop runs once per stored call
    for (
        turn_id,
        trace_id,
        span_id,
        parent,
        name,
        call_id,
        args,
        raw,
        result,
        error,
        status,
        start,
        end,
        convention,
        step,
        executed,
    ) in rows:
        if not results:
            result = RESULT_PRESENT if result else None
        if unread:
            args = UNREAD
        call = ToolCall(
            trace_id,
            span_id,
            parent,
            name,
            call_id,
            args,
            raw,
            result,
            error,
            status or "ok",
            start or 0,
            end or 0,
            convention or "",
            {},
            step,
            bool(executed),
        )
        calls = per_turn.get(turn_id)
        if calls is None:
            per_turn[turn_id] = [call]
        else:
            calls.append(call)
    return per_turn


def scope_key(scope: dict[str, Any]) -> str:
    """A result scope as stored: `conversation` or `turn:<i>`."""
    return f"turn:{scope['turn']}" if scope.get("kind") == "turn" else "conversation"


CurrentKey = tuple[int, str, int, int]  # (conversation, expectation, version, change_seq)


def current_results(conn: Connection, ids: Sequence[int]) -> dict[CurrentKey, list[int]]:
    """The current results of `ids`: (conversation, expectation, version, change_seq) → the
    ids of its result rows (one per scope)."""
    if not ids:
        return {}
    r = results.c
    rows = conn.execute(
        select(r.id, r.conversation_id, r.expectation, r.expectation_version, r.change_seq).where(
            among(conn, r.conversation_id, ids), r.current
        )
    )
    out: dict[CurrentKey, list[int]] = {}
    for rid, cid, slug, version, seq in rows:
        out.setdefault((cid, slug, version, seq), []).append(rid)
    return out


def store_results(
    conn: Connection,
    again: set[tuple[int, str]],
    rows: Sequence[dict[str, Any]],
    tool_rows: Sequence[dict[str, Any]],
    current: Mapping[CurrentKey, Sequence[int]],
) -> int:
    """Insert new result rows (and their per-tool rows); the `current` ones
    (`current_results`, read in this transaction under the conversations' row locks) of each
    (conversation, expectation) scored `again` stop being current. Superseded rows are found
    by primary key, so the cost does not grow with the table."""
    if not again:
        return 0
    superseded = sorted(
        rid for (cid, slug, _, _), rids in current.items() if (cid, slug) in again for rid in rids
    )
    if superseded:
        conn.execute(
            update(results).where(among(conn, results.c.id, superseded)).values(current=False))
    insert_rows(conn, results, rows)
    insert_rows(conn, result_tools, tool_rows)
    return len(rows)
