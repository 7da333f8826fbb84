"""Conversations: list, one with its turns and tool calls, and its results."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Annotated

from fastapi import APIRouter, Query, Response
from fastapi.concurrency import run_in_threadpool

from tooltrail.collector import conversation_view
from tooltrail.collector.api import convert, selection
from tooltrail.collector.api.deps import (
    CursorParam,
    Limit,
    Project,
    ReadConn,
    State,
    TimeParam,
    WriteConn,
    decode_cursor,
    page,
    parse_time,
)
from tooltrail.collector.api.errors import ApiError
from tooltrail.collector.api.schemas import (
    ConversationOut,
    ConversationPage,
    ConversationResults,
    ErrorBody,
)
from tooltrail.collector.governance import retention
from tooltrail.collector.store import queries
from tooltrail.collector.store.state import scoring_state
from tooltrail.matcher import parse_expectation

log = logging.getLogger(__name__)

router = APIRouter(
    prefix="/api/v1/conversations",
    tags=["conversations"],
    responses={400: {"model": ErrorBody}, 404: {"model": ErrorBody}},
)


@router.get("", response_model=ConversationPage)
def list_conversations(
    conn: ReadConn,
    project: Project,
    limit: Limit = 50,
    cursor: CursorParam = None,
    service: str | None = None,
    tool: str | None = None,
    since: TimeParam = None,
    until: TimeParam = None,
    has_errors: bool | None = None,
    agent: str | None = None,
    passed: Annotated[
        bool | None, Query(description="has a current result that passed / failed")
    ] = None,
    expectation: Annotated[str | None, Query(description="has a current result of it")] = None,
    source: Annotated[str | None, Query(
        description="has a call of this provenance: otel, explicit, a2a, adk_events")] = None,
    selected_by: Annotated[str | None, Query(description=(
        "picked by the selector of this active expectation of the project, as the worker "
        "picks (scored yet or not)"))] = None,
) -> ConversationPage:
    """Conversations of the project, newest first."""
    since_s, until_s = parse_time(since, "since"), parse_time(until, "until")
    picked = selection.Picked(None, None, None, None)
    if selected_by is not None:
        row = queries.latest_expectation(conn, selected_by)
        if row is None or not row["active"] or row["project"] != project:
            raise ApiError(400, f"selected_by: no active expectation {selected_by!r} in "
                           f"project {project!r}", {"field": "selected_by"})
        picked = selection.picked_by(parse_expectation(row["body"]))
    rows = queries.list_conversations(
        conn,
        limit=limit + 1,
        before_id=decode_cursor(cursor),
        service=service if service is not None else picked.service,
        tool=tool,
        key_prefix=picked.key_prefix,
        picks=picked.picks,
        since_ns=int(since_s * 1e9) if since_s is not None else None,
        until_ns=int(until_s * 1e9) if until_s is not None else None,
        has_errors=has_errors,
        agent=agent if agent is not None else picked.agent,
        passed=passed,
        expectation=expectation,
        source=source,
        project=project,
    )
    rows, next_cursor = page(rows, limit)
    return ConversationPage(
        data=[convert.conversation_summary(r) for r in rows], next_cursor=next_cursor
    )


MAX_WAIT = 20.0  # seconds a results request may hold (below common client timeouts)
POLL = 0.2  # seconds between looks while waiting


@router.get("/{key:path}/results", response_model=ConversationResults)
async def conversation_results(
    key: str,
    app: State,
    project: Project,
    all: Annotated[bool, Query(description="include history")] = False,
    wait: Annotated[float, Query(ge=0, le=MAX_WAIT, description=(
        "seconds to wait while the conversation's scoring is pending; the answer comes as "
        "soon as scoring is current (or when the wait is over)"))] = 0,
) -> ConversationResults:
    """The latest result per applicable expectation (every result with all=true), and
    `scoring`: `pending` while the worker still owes the conversation a pass."""
    engine = app.read_engine or app.engine
    deadline = time.monotonic() + wait

    def look() -> ConversationResults | None:
        with engine.connect() as conn:
            row = queries.get_conversation(conn, key, project)
            if row is None:
                return None
            rows = queries.conversation_results(conn, row["id"], history=all)
            return ConversationResults(data=[convert.result(r, key) for r in rows],
                                       next_cursor=None, scoring=scoring_state(conn, row))

    while True:  # an unknown conversation is answered at once: only scoring is waited for
        answer = await run_in_threadpool(look)
        if answer is None or answer.scoring == "scored" or time.monotonic() >= deadline:
            break
        await asyncio.sleep(min(POLL, max(0.0, deadline - time.monotonic())))
    if answer is None:
        raise ApiError(404, f"no conversation {key!r} in project {project!r}")
    return answer


@router.get("/{key:path}", response_model=ConversationOut)
def get_conversation(key: str, conn: ReadConn, project: Project) -> ConversationOut:
    """One conversation of the project: its turns in order, each turn's tool calls in order."""
    row = queries.get_conversation(conn, key, project)
    if row is None:
        raise ApiError(404, f"no conversation {key!r} in project {project!r}")
    return convert.conversation(row, conversation_view.conversation_turns(conn, row["id"]))


@router.delete("/{key:path}", status_code=204, responses={403: {"model": ErrorBody}})
def delete_conversation(key: str, conn: WriteConn, app: State, project: Project) -> Response:
    """Delete one conversation of the project with its turns, tool calls, results and ingest
    errors (an admin key: privacy requests); the same key in other projects is kept. Spans of
    it that arrive later make a new conversation."""
    if not retention.delete_by_key(conn, key, project):
        raise ApiError(404, f"no conversation {key!r} in project {project!r}")
    app.metrics.deleted_conversations.labels("request").inc()
    log.info("deleted conversation %r of project %r and everything derived from it "
             "(on request)", key, project)
    return Response(status_code=204)
