"""Rescoring jobs: create, progress, cancel."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from tooltrail.collector import reextract
from tooltrail.collector.api.deps import (
    CursorParam,
    Limit,
    Project,
    ReadConn,
    State,
    WriteConn,
    decode_cursor,
    page,
    parse_time,
    rfc3339,
)
from tooltrail.collector.api.errors import ApiError
from tooltrail.collector.api.schemas import ErrorBody, JobCreated, JobIn, JobOut, JobPage
from tooltrail.collector.store import jobs
from tooltrail.matcher import InvalidExpectation
from tooltrail.matcher.selector import parse_selector

router = APIRouter(
    prefix="/api/v1/jobs",
    tags=["jobs"],
    responses={400: {"model": ErrorBody}, 404: {"model": ErrorBody}},
)


def job_out(row: dict[str, Any]) -> JobOut:
    spec = row["spec"]
    return JobOut(
        id=str(row["id"]),
        kind=spec.get("kind", "rescore"),
        status=row["status"],
        total=row["total"],
        done=row["done"],
        failed=row["failed"],
        expectations=[{"id": slug, "version": v} for slug, v in spec.get("expectations", [])],
        selector=spec.get("selector"),
        since=rfc3339(spec.get("since")),
        until=rfc3339(spec.get("until")),
        created_at=rfc3339(row["created_at"]),
        started_at=rfc3339(row["started_at"]),
        finished_at=rfc3339(row["finished_at"]),
    )


def job_id(raw: str) -> int:
    if not raw.isdigit() or int(raw) >= 2**63:
        raise ApiError(404, f"no job {raw!r}")
    return int(raw)


@router.post("", status_code=202, response_model=JobCreated)
def create_job(body: JobIn, conn: WriteConn, app: State, project: Project) -> JobCreated:
    """Rescore the project's stored conversations against its expectations; the job is split
    into chunks any worker can claim."""
    selector = None
    if body.selector is not None:
        try:
            selector = parse_selector(body.selector).to_dict()
        except InvalidExpectation as exc:
            raise ApiError(400, str(exc), {"path": exc.path, "message": exc.message}) from exc
    if body.kind == "reextract":
        return _reextract(body, selector, conn, app)
    versions = jobs.newest_versions(conn, body.expectations, project)
    missing = sorted(set(body.expectations or ()) - {slug for slug, _ in versions})
    if missing:
        raise ApiError(400, f"expectations: no active expectation {missing[0]!r} "
                       f"in project {project!r}")
    if not versions:
        raise ApiError(400, f"expectations: project {project!r} has no active expectation "
                       "to score")
    spec = {
        "expectations": versions,
        "selector": selector,
        "since": parse_time(body.since, "since"),
        "until": parse_time(body.until, "until"),
        "project": project,
    }
    new_id = jobs.create_job(conn, spec)
    conn.commit()
    if app.wake_worker is not None:
        app.wake_worker()
    return JobCreated(id=str(new_id))


def _reextract(body: JobIn, selector: dict[str, Any] | None, conn: WriteConn,
               app: State) -> JobCreated:
    """A `reextract` job, with the service's extraction options."""
    if body.expectations is not None:
        raise ApiError(400, "expectations: a reextract job rescores what changed against every "
                       "active expectation; it takes none")
    if app.settings.redaction_rules:
        raise ApiError(400, "kind: the span archive holds spans before redaction; re-extracting "
                       "it with redaction rules set would store what they remove")
    new_id = reextract.create_job(
        conn, app.settings.extract_options(),
        selector=selector, since=parse_time(body.since, "since"),
        until=parse_time(body.until, "until"), span_attributes=app.settings.span_attributes)
    conn.commit()
    if app.wake_worker is not None:
        app.wake_worker()
    return JobCreated(id=str(new_id))


@router.get("", response_model=JobPage)
def list_jobs(
    conn: ReadConn,
    limit: Limit = 50,
    cursor: CursorParam = None,
    status: Annotated[jobs.JobStatus | None, Query(description="only jobs in this state")] = None,
) -> JobPage:
    """Rescoring jobs, newest first."""
    rows = jobs.list_jobs(conn, limit=limit + 1, before_id=decode_cursor(cursor), status=status)
    rows, next_cursor = page(rows, limit)
    return JobPage(data=[job_out(r) for r in rows], next_cursor=next_cursor)


@router.get("/{id}", response_model=JobOut)
def get_job(id: str, conn: ReadConn) -> JobOut:
    """Status and progress."""
    row = jobs.get_job(conn, job_id(id))
    if row is None:
        raise ApiError(404, f"no job {id!r}")
    return job_out(row)


@router.delete("/{id}", response_model=JobOut)
def cancel_job(id: str, conn: WriteConn) -> JobOut:
    """Cancel a queued or running job (a finished job is left as it is)."""
    number = job_id(id)
    if jobs.cancel_job(conn, number) is None:
        raise ApiError(404, f"no job {id!r}")
    row = jobs.get_job(conn, number)
    assert row is not None
    return job_out(row)
