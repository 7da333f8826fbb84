"""Conversations: list, one with its turns and tool calls, and its results."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from collector.api import convert
from collector.api.deps import (
    CursorParam,
    Limit,
    ReadConn,
    TimeParam,
    decode_cursor,
    page,
    parse_time,
)
from collector.api.errors import ApiError
from collector.api.schemas import ConversationOut, ConversationPage, ErrorBody, ResultPage
from collector.store import queries

router = APIRouter(
    prefix="/api/v1/conversations",
    tags=["conversations"],
    responses={400: {"model": ErrorBody}, 404: {"model": ErrorBody}},
)


@router.get("", response_model=ConversationPage)
def list_conversations(
    conn: ReadConn,
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
) -> ConversationPage:
    """Conversations, newest first."""
    since_s, until_s = parse_time(since, "since"), parse_time(until, "until")
    rows = queries.list_conversations(
        conn,
        limit=limit + 1,
        before_id=decode_cursor(cursor),
        service=service,
        tool=tool,
        since_ns=int(since_s * 1e9) if since_s is not None else None,
        until_ns=int(until_s * 1e9) if until_s is not None else None,
        has_errors=has_errors,
        agent=agent,
        passed=passed,
        expectation=expectation,
        source=source,
    )
    rows, next_cursor = page(rows, limit)
    return ConversationPage(
        data=[convert.conversation_summary(r) for r in rows], next_cursor=next_cursor
    )


@router.get("/{key:path}/results", response_model=ResultPage)
def conversation_results(
    key: str,
    conn: ReadConn,
    all: Annotated[bool, Query(description="include history")] = False,
) -> ResultPage:
    """The latest result per applicable expectation (every result with all=true)."""
    row = queries.get_conversation(conn, key)
    if row is None:
        raise ApiError(404, f"no conversation {key!r}")
    rows = queries.conversation_results(conn, row["id"], history=all)
    return ResultPage(data=[convert.result(r, key) for r in rows], next_cursor=None)


@router.get("/{key:path}", response_model=ConversationOut)
def get_conversation(key: str, conn: ReadConn) -> ConversationOut:
    """One conversation: its turns in order, each turn's tool calls in order."""
    row = queries.get_conversation(conn, key)
    if row is None:
        raise ApiError(404, f"no conversation {key!r}")
    return convert.conversation(row, queries.conversation_turns(conn, row["id"]))
