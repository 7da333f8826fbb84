"""Expectations: create, list, get, new version, deactivate, validate."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Response
from sqlalchemy import Connection

from tooltrail.collector import summaries
from tooltrail.collector.api import convert
from tooltrail.collector.api.bodies import ExpectationBody
from tooltrail.collector.api.deps import (
    CursorParam,
    Limit,
    Project,
    ReadConn,
    State,
    TimeParam,
    VersionParam,
    WriteConn,
    decode_cursor,
    page,
    parse_time,
    rfc3339,
)
from tooltrail.collector.api.errors import ApiError
from tooltrail.collector.api.expectation_schema import request_body
from tooltrail.collector.api.schemas import (
    ErrorBody,
    ExpectationCreated,
    ExpectationOut,
    ExpectationPage,
    SummaryOut,
    ValidationOut,
)
from tooltrail.collector.api.selection import selection
from tooltrail.collector.store import queries
from tooltrail.matcher import Expectation, InvalidExpectation, parse_expectation

router = APIRouter(
    prefix="/api/v1",
    tags=["expectations"],
    responses={400: {"model": ErrorBody}, 404: {"model": ErrorBody},
               415: {"model": ErrorBody}, 422: {"model": ErrorBody}},
)


def of_project(conn: Connection, slug: str, project: str,
               version: int | None = None) -> dict[str, Any]:
    """The expectation `slug` (its newest version, or `version`) when it belongs to
    `project`; else 404."""
    row = queries.latest_expectation(conn, slug, version)
    if row is None or row["project"] != project:
        raise ApiError(404, f"no expectation {slug!r}" + (f" version {version}" if version else "")
                       + f" in project {project!r}")
    return row


def parse(body: dict[str, Any], *, require_id: bool = True) -> Expectation:
    """Parse an expectation or answer 400 naming the bad field."""
    try:
        return parse_expectation(body, require_id=require_id)
    except InvalidExpectation as exc:
        raise ApiError(400, str(exc), {"path": exc.path, "message": exc.message}) from exc


@router.post(
    "/expectations",
    openapi_extra=request_body(require_id=True),
    status_code=201,
    response_model=ExpectationCreated,
    responses={409: {"model": ErrorBody}},
)
def create_expectation(
    body: ExpectationBody, conn: WriteConn, app: State, project: Project
) -> ExpectationCreated:
    """Register an expectation in the project; every stored conversation of the project it
    applies to is scored. The answer says which conversations it selects: with no selector,
    every conversation of the project. A slug names one expectation across projects (409 when
    another project has it)."""
    exp = parse(body)
    assert exp.id is not None
    try:
        version = queries.add_expectation_version(conn, exp.id, exp.to_dict(), must_exist=False,
                                                  project=project)
    except queries.Conflict as exc:
        raise ApiError(409, str(exc)) from exc
    selects = selection(conn, exp, project)
    conn.commit()
    if app.wake_worker is not None:
        app.wake_worker()
    return ExpectationCreated(id=exp.id, version=version, selects=selects)


@router.post(
    "/expectations:validate",
    response_model=ValidationOut,
    openapi_extra=request_body(require_id=False),
)
def validate_expectation(body: ExpectationBody) -> ValidationOut:
    """Validate without storing: 200 with the normalised form, or 400 naming the field."""
    return ValidationOut(valid=True, expectation=parse(body, require_id=False).to_dict())


@router.get("/expectations", response_model=ExpectationPage)
def list_expectations(
    conn: ReadConn,
    project: Project,
    limit: Limit = 50,
    cursor: CursorParam = None,
    include_inactive: bool = False,
) -> ExpectationPage:
    """The newest version of each expectation of the project."""
    rows = queries.list_expectations(
        conn, include_inactive=include_inactive, limit=limit + 1, after_id=decode_cursor(cursor),
        project=project,
    )
    rows, next_cursor = page(rows, limit)
    return ExpectationPage(data=[convert.expectation(r) for r in rows], next_cursor=next_cursor)


@router.get("/expectations/{slug}", response_model=ExpectationOut)
def get_expectation(
    slug: str, conn: ReadConn, project: Project, version: VersionParam = None
) -> ExpectationOut:
    """The newest version, or `version`."""
    return convert.expectation(of_project(conn, slug, project, version))


@router.get("/expectations/{slug}/summary", response_model=SummaryOut)
def expectation_summary(
    slug: str,
    conn: ReadConn,
    project: Project,
    bucket: Annotated[Literal["1h", "1d"] | None, Query(description="time buckets")] = None,
    since: TimeParam = None,
    until: TimeParam = None,
    version: VersionParam = None,
) -> SummaryOut:
    """Counts, pass rate, micro precision/recall/F1, per tool, common failure reasons, and
    the same per time bucket (by conversation start), over the results that count: those of
    the active version (so a `version` other than the active one has none)."""
    of_project(conn, slug, project)
    since_s, until_s = parse_time(since, "since"), parse_time(until, "until")
    figures = summaries.expectation_summary(
        conn,
        slug,
        since_ns=None if since_s is None else int(since_s * 1e9),
        until_ns=None if until_s is None else int(until_s * 1e9),
        bucket=bucket,
        version=version,
    )
    if figures.get("buckets") is not None:
        figures["buckets"] = [{**b, "start": rfc3339(b["start"])} for b in figures["buckets"]]
    return SummaryOut(expectation=slug, **figures)


@router.put(
    "/expectations/{slug}",
    response_model=ExpectationCreated,
    openapi_extra=request_body(require_id=False),
    responses={409: {"model": ErrorBody}},
)
def replace_expectation(
    slug: str, body: ExpectationBody, conn: WriteConn, app: State, project: Project
) -> ExpectationCreated:
    """Store a new version (history kept); conversations it applies to are rescored."""
    body = {**body}
    if body.setdefault("id", slug) != slug:
        raise ApiError(400, f"id: {body['id']!r} does not match the path {slug!r}")
    exp = parse(body)
    try:
        version = queries.add_expectation_version(conn, slug, exp.to_dict(), must_exist=True,
                                                  project=project)
    except LookupError as exc:
        raise ApiError(404, f"no expectation {slug!r} in project {project!r}; POST it first"
                       ) from exc
    except queries.Conflict as exc:
        raise ApiError(409, str(exc)) from exc
    selects = selection(conn, exp, project)
    conn.commit()
    if app.wake_worker is not None:
        app.wake_worker()
    return ExpectationCreated(id=slug, version=version, selects=selects)


@router.delete("/expectations/{slug}", status_code=204, response_class=Response)
def deactivate_expectation(slug: str, conn: WriteConn, project: Project) -> Response:
    """Deactivate: it is no longer scored; results and history are kept."""
    of_project(conn, slug, project)
    if not queries.deactivate_expectation(conn, slug):
        raise ApiError(404, f"no expectation {slug!r}")
    return Response(status_code=204)
