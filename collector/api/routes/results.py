"""Results across conversations, and recent ingest errors."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from tooltrail.collector.api import convert
from tooltrail.collector.api.deps import (
    CursorParam,
    Limit,
    Project,
    ReadConn,
    TimeParam,
    decode_cursor,
    page,
    parse_time,
    rfc3339,
)
from tooltrail.collector.api.errors import ApiError
from tooltrail.collector.api.schemas import ErrorBody, IngestErrorList, IngestErrorOut, ResultPage
from tooltrail.collector.store import queries

router = APIRouter(
    prefix="/api/v1",
    tags=["results"],
    responses={400: {"model": ErrorBody}, 404: {"model": ErrorBody}},
)


@router.get("/results", response_model=ResultPage)
def list_results(
    conn: ReadConn,
    project: Project,
    limit: Limit = 50,
    cursor: CursorParam = None,
    expectation: str | None = None,
    conversation: str | None = None,
    passed: bool | None = None,
    since: TimeParam = None,
    until: TimeParam = None,
    all: Annotated[bool, Query(description="include superseded results")] = False,
) -> ResultPage:
    """Results of the project's conversations, newest first."""
    conversation_id = None
    if conversation is not None:
        row = queries.get_conversation(conn, conversation, project)
        if row is None:
            raise ApiError(404, f"no conversation {conversation!r} in project {project!r}")
        conversation_id = row["id"]
    rows = queries.list_results(
        conn,
        limit=limit + 1,
        before_id=decode_cursor(cursor),
        expectation=expectation,
        conversation_id=conversation_id,
        passed=passed,
        since=parse_time(since, "since"),
        until=parse_time(until, "until"),
        history=all,
        project=project,
    )
    rows, next_cursor = page(rows, limit)
    return ResultPage(
        data=[convert.result(r, r["conversation_key"]) for r in rows], next_cursor=next_cursor
    )


@router.get("/ingest/errors", response_model=IngestErrorList)
def ingest_errors(conn: ReadConn, limit: Limit = 50) -> IngestErrorList:
    """The most recent rejected requests and spans, with why."""
    rows = queries.recent_ingest_errors(conn, limit)
    return IngestErrorList(data=[IngestErrorOut(**{**r, "at": rfc3339(r["at"])}) for r in rows])
