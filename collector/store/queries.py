"""Read and write queries behind the REST API. Routes call these; they never build SQL."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, and_, func, select, update
from sqlalchemy.exc import IntegrityError

from tooltrail.collector.model import storable_text
from tooltrail.collector.projects import DEFAULT_PROJECT
from tooltrail.collector.store.bulk import among
from tooltrail.collector.store.jobs import create_job
from tooltrail.collector.store.jsonio import dumps
from tooltrail.collector.store.tables import (
    conversations,
    expectations,
    ingest_errors,
    results,
    tool_calls,
    turns,
)
from tooltrail.collector.store.verdicts import counts, result_columns


class Conflict(Exception):
    """The write conflicts with what is stored (409)."""


def list_conversations(
    conn: Connection,
    *,
    limit: int,
    before_id: int | None,
    service: str | None = None,
    tool: str | None = None,
    since_ns: int | None = None,
    until_ns: int | None = None,
    has_errors: bool | None = None,
    agent: str | None = None,
    passed: bool | None = None,
    expectation: str | None = None,
    reason: str | None = None,
    key_contains: str | None = None,
    source: str | None = None,
    project: str | None = None,
    key_prefix: str | None = None,
    picks: Callable[[dict[str, Any]], bool] | None = None,
) -> list[dict[str, Any]]:
    """Conversations, newest first (by id), filtered. `passed`, `expectation` and `reason`
    ask for one current result having all of them; `picks`, a predicate on the row that the
    other filters narrow (an expectation's selector, `collector.api.selection`), keeps the
    rows it holds for, read in chunks until the page is full."""
    c = conversations.c
    query = select(conversations)
    order: Any = c.id  # the id column the rows are read newest first by (and the cursor bounds)
    if project is not None:
        query = query.where(c.project == project)
    if agent is not None:
        query = query.where(json_list_contains(conn, c.agents, agent))
    # A filter on the results or calls reads the matching conversation ids from their table,
    # never a probe per conversation: a filter matching few conversations of many would
    # otherwise read every conversation newest first, probing for each one. The cursor bounds
    # the ids inside too, so page N reads no id of a newer page.
    bound = before_id if picks is None else None  # `picks` moves its cursor as it reads
    if passed is not None or expectation is not None or reason is not None:
        r = results.c
        scored = select(r.conversation_id).where(counts())
        if passed is not None:
            scored = scored.where(r.passed == passed)
        if expectation is not None:
            scored = scored.where(r.expectation == expectation)
        if reason is not None:
            scored = scored.where(r.reason == reason)
        if bound is not None:
            scored = scored.where(r.conversation_id < bound)
        query = query.where(c.id.in_(scored))
    if key_contains:
        query = query.where(c.key.contains(key_contains, autoescape=True))
    if key_prefix:  # SQLite's LIKE ignores ASCII case: a superset there, `picks` decides
        query = query.where(c.key.startswith(key_prefix, autoescape=True))
    if service is not None:
        query = query.where(c.service == service)
    if since_ns is not None:
        query = query.where(c.end_ns >= since_ns)
    if until_ns is not None:
        query = query.where(c.start_ns <= until_ns)
    if has_errors is not None:
        query = query.where(c.error_count > 0 if has_errors else c.error_count == 0)
    if tool is not None:
        if conn.dialect.name == "sqlite":
            # SQLite builds an IN list whole (every conversation calling a common tool) before
            # the first row: walk ix_tool_calls_name (name, conversation_id) newest first
            # instead, one row per conversation, so a page stops after its rows whether the
            # tool is common or never called.
            k = tool_calls.alias("called").c  # an alias: `source` below correlates tool_calls
            query = (query.select_from(k.conversation_id.table.join(
                conversations, c.id == k.conversation_id)).where(k.name == tool)
                .group_by(k.conversation_id))
            order = k.conversation_id
        else:  # a semi-join, which PostgreSQL plans from its statistics
            k = tool_calls.c
            called = select(k.conversation_id).where(k.name == tool)
            if bound is not None:
                called = called.where(k.conversation_id < bound)
            query = query.where(c.id.in_(called))
    if source is not None:  # has a call of that provenance
        query = query.where(
            select(tool_calls.c.id)
            .where(tool_calls.c.conversation_id == c.id, tool_calls.c.source == source)
            .exists()
        )
    query = query.order_by(order.desc())
    if picks is None:
        if before_id is not None:
            query = query.where(order < before_id)
        return [dict(r._mapping) for r in conn.execute(query.limit(limit))]
    out: list[dict[str, Any]] = []
    while len(out) < limit:
        chunk = query if before_id is None else query.where(order < before_id)
        rows = [dict(r._mapping) for r in conn.execute(chunk.limit(PICKED_CHUNK))]
        out.extend(r for r in rows if picks(r))
        if len(rows) < PICKED_CHUNK:
            break
        before_id = rows[-1]["id"]
    return out[:limit]


PICKED_CHUNK = 1000  # rows read per statement while `picks` fills a page


def count_conversations(conn: Connection, project: str | None = None) -> int:
    """How many conversations are stored (in `project`)."""
    query = select(func.count()).select_from(conversations)
    if project is not None:
        query = query.where(conversations.c.project == project)
    return int(conn.execute(query).scalar_one())


def current_verdicts(
    conn: Connection, conversation_ids: Sequence[int]
) -> list[tuple[int, str, bool]]:
    """(conversation id, expectation, passed) of the current results of some conversations,
    by expectation (a multi-scope expectation has one row per scope instance)."""
    if not conversation_ids:
        return []
    r = results.c
    rows = conn.execute(
        select(r.conversation_id, r.expectation, r.passed)
        .where(among(conn, r.conversation_id, conversation_ids), counts())
        .order_by(r.conversation_id, r.expectation)
    )
    return [(cid, slug, bool(passed)) for cid, slug, passed in rows]


def json_list_contains(conn: Connection, column: Any, value: str) -> Any:
    """`value` is an element of the JSON list in `column` (JSONB containment / json_each)."""
    if conn.dialect.name == "postgresql":
        return column.op("@>")(func.jsonb_build_array(value))
    each = func.json_each(column).table_valued("value")
    contains = select(each.c.value).where(each.c.value == value).exists()
    quoted = f'"{value}"'
    if not value.isascii() or dumps(value) != quoted:  # an encoder may escape it otherwise
        return contains
    # Printable ASCII that needs no escape is in the list's text as `"value"`, whichever
    # encoder wrote it: a substring test rules out most rows before json_each parses any (an
    # agent no conversation has reads every row).
    return and_(func.instr(column, quoted) > 0, contains)


def get_conversation(
    conn: Connection, key: str, project: str = DEFAULT_PROJECT
) -> dict[str, Any] | None:
    """One conversation row of `project` by key, normalised as ingest stored it (NUL →
    U+FFFD)."""
    key = storable_text(key)
    c = conversations.c
    row = conn.execute(select(conversations).where(c.key == key, c.project == project)).first()
    return None if row is None else dict(row._mapping)


def conversation_rows(
    conn: Connection, conversation_id: int
) -> tuple[list[dict[str, Any]], list[Mapping[Any, Any]]]:
    """One conversation's turn rows in start order and its tool_calls rows as stored
    (executions and model requests) in (start, span id) order; `collector.conversation_view`
    composes what they show."""
    turn_rows = [
        dict(r._mapping)
        for r in conn.execute(
            select(turns)
            .where(turns.c.conversation_id == conversation_id)
            .order_by(turns.c.start_ns, turns.c.id)
        )
    ]
    k = tool_calls.c
    rows = conn.execute(select(tool_calls).where(k.conversation_id == conversation_id)
                        .order_by(k.start_ns, k.span_id))
    return turn_rows, [r._mapping for r in rows]


def conversations_rows(
    conn: Connection, conversation_ids: Sequence[int]
) -> dict[int, tuple[list[dict[str, Any]], list[Mapping[Any, Any]]]]:
    """`conversation_rows` of several conversations, read in two statements (a page showing
    many conversations' calls would otherwise cost two per conversation)."""
    out: dict[int, tuple[list[dict[str, Any]], list[Mapping[Any, Any]]]] = {
        cid: ([], []) for cid in conversation_ids}
    if not out:
        return out
    t, k = turns.c, tool_calls.c
    for row in conn.execute(select(turns).where(among(conn, t.conversation_id, list(out)))
                            .order_by(t.conversation_id, t.start_ns, t.id)):
        out[row.conversation_id][0].append(dict(row._mapping))
    for row in conn.execute(select(tool_calls).where(among(conn, k.conversation_id, list(out)))
                            .order_by(k.conversation_id, k.start_ns, k.span_id)):
        out[row.conversation_id][1].append(row._mapping)
    return out


def conversation_results(
    conn: Connection, conversation_id: int, *, history: bool
) -> list[dict[str, Any]]:
    """Results that count (or every result with `history`) of one conversation, newest first."""
    r = results.c
    query = select(*result_columns()).where(r.conversation_id == conversation_id)
    if not history:
        query = query.where(counts())
    query = query.order_by(r.expectation, r.scored_at.desc(), r.id.desc())
    return [dict(row._mapping) for row in conn.execute(query)]


def latest_expectation(
    conn: Connection, slug: str, version: int | None = None
) -> dict[str, Any] | None:
    """The newest version of an expectation (or the given version)."""
    e = expectations.c
    query = select(expectations).where(e.slug == slug)
    query = query.where(e.version == version) if version else query.order_by(e.version.desc())
    row = conn.execute(query.limit(1)).first()
    return None if row is None else dict(row._mapping)


def expectation_versions(conn: Connection, slug: str) -> list[dict[str, Any]]:
    """Every version of an expectation, newest first."""
    e = expectations.c
    rows = conn.execute(select(expectations).where(e.slug == slug).order_by(e.version.desc()))
    return [dict(r._mapping) for r in rows]


def list_expectations(
    conn: Connection, *, include_inactive: bool, limit: int, after_id: int | None,
    project: str | None = None,
) -> list[dict[str, Any]]:
    """The newest version of each expectation (of `project`), by id of that version."""
    e = expectations.c
    newest = select(e.slug, func.max(e.version).label("v")).group_by(e.slug).subquery()
    query = (
        select(expectations)
        .join(newest, and_(e.slug == newest.c.slug, e.version == newest.c.v))
        .order_by(e.id)
        .limit(limit)
    )
    if not include_inactive:
        query = query.where(e.active)
    if project is not None:
        query = query.where(e.project == project)
    if after_id is not None:
        query = query.where(e.id > after_id)
    return [dict(r._mapping) for r in conn.execute(query)]


def add_expectation_version(
    conn: Connection, slug: str, body: dict[str, Any], *, must_exist: bool,
    project: str = DEFAULT_PROJECT,
) -> int:
    """Store a new version in `project` and queue a rescoring job for it over the project's
    conversations; returns the version number. A slug names one expectation across projects
    (results name their expectation by it)."""
    current = latest_expectation(conn, slug)
    if current is not None and current["project"] != project:
        if must_exist:
            raise LookupError(slug)
        raise Conflict(f"expectation {slug!r} belongs to project {current['project']!r}; "
                       "a slug names one expectation across projects")
    if must_exist and current is None:
        raise LookupError(slug)
    if not must_exist and current is not None and current["active"]:
        raise Conflict(f"expectation {slug!r} exists; PUT a new version instead")
    version = 1 if current is None else current["version"] + 1
    now = time.time()
    try:
        conn.execute(
            expectations.insert().values(
                slug=slug, version=version, body=body, active=True, created_at=now,
                project=project,
            )
        )
    except IntegrityError as exc:  # a concurrent writer took this version number
        raise Conflict(f"expectation {slug!r} was changed concurrently; retry") from exc
    create_job(conn, {"expectations": [[slug, version]], "selector": None, "project": project})
    return version


def deactivate_expectation(conn: Connection, slug: str) -> bool:
    """Deactivate every version (results and history are kept). False if unknown."""
    done = conn.execute(
        update(expectations).where(expectations.c.slug == slug).values(active=False)
    )
    return done.rowcount > 0


def list_results(
    conn: Connection,
    *,
    limit: int,
    before_id: int | None,
    expectation: str | None,
    conversation_id: int | None,
    passed: bool | None,
    since: float | None,
    until: float | None,
    history: bool = False,
    project: str | None = None,
) -> list[dict[str, Any]]:
    """Results that count (every result with `history`) of `project`'s conversations, newest
    first, filtered."""
    r = results.c
    query = (
        select(*result_columns(), conversations.c.key.label("conversation_key"))
        .join(conversations, conversations.c.id == r.conversation_id)
        .order_by(r.id.desc())
        .limit(limit)
    )
    if not history:
        query = query.where(counts())
    if project is not None:
        query = query.where(conversations.c.project == project)
    for column, value in (
        (r.expectation, expectation),
        (r.conversation_id, conversation_id),
        (r.passed, passed),
    ):
        if value is not None:
            query = query.where(column == value)
    if before_id is not None:
        query = query.where(r.id < before_id)
    if since is not None:
        query = query.where(r.scored_at >= since)
    if until is not None:
        query = query.where(r.scored_at <= until)
    return [dict(row._mapping) for row in conn.execute(query)]


def recent_ingest_errors(conn: Connection, limit: int) -> Sequence[dict[str, Any]]:
    """The most recent rejected requests and spans."""
    e = ingest_errors.c
    rows = conn.execute(select(ingest_errors).order_by(e.id.desc()).limit(limit))
    return [dict(r._mapping) for r in rows]


def conversation_keys(conn: Connection, ids: Sequence[int]) -> dict[int, str]:
    """Conversation id → key."""
    c = conversations.c
    return {cid: key for cid, key in conn.execute(
        select(c.id, c.key).where(c.id.in_(list(ids))))} if ids else {}
