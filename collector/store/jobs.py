"""Rescoring jobs: created with their chunks, claimed chunk by chunk by any worker."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import Connection, func, or_, select, update

from tooltrail.collector.store.tables import conversations, expectations, job_chunks, jobs
from tooltrail.collector.store.verdicts import active_versions

CHUNK_SIZE = 500  # conversation ids per chunk
JobStatus = Literal["queued", "running", "done", "failed", "cancelled"]


@dataclass(frozen=True, slots=True)
class Chunk:
    """A leased chunk of a job."""

    id: int
    job_id: int
    first_id: int
    last_id: int
    spec: dict[str, Any]


def time_filter(spec: dict[str, Any]) -> list[Any]:
    """SQL conditions for a spec's project, since and until (unix seconds, on conversation
    span times)."""
    c = conversations.c
    conditions = []
    if spec.get("project") is not None:
        conditions.append(c.project == spec["project"])
    if spec.get("since") is not None:
        conditions.append(c.end_ns >= int(spec["since"] * 1e9))
    if spec.get("until") is not None:
        conditions.append(c.start_ns <= int(spec["until"] * 1e9))
    return conditions


def create_job(conn: Connection, spec: dict[str, Any], *, chunk_size: int = CHUNK_SIZE) -> int:
    """Store a job and split the conversations it covers into chunks of id ranges.

    `spec`: {"expectations": [[slug, version], …], "selector": {…} | None,
    "since": float | None, "until": float | None, "project": str | None}.
    """
    now = time.time()
    c = conversations.c
    where = time_filter(spec)
    total, lo, hi = conn.execute(
        select(func.count(), func.min(c.id), func.max(c.id)).where(*where)
    ).one()
    job_id = conn.execute(
        jobs.insert()
        .values(
            spec=spec,
            status="queued" if total else "done",
            total=total,
            done=0,
            failed=0,
            created_at=now,
            updated_at=now,
            finished_at=None if total else now,
        )
        .returning(jobs.c.id)
    ).scalar_one()
    if total:
        conn.execute(
            job_chunks.insert(),
            [
                {
                    "job_id": job_id,
                    "first_id": first,
                    "last_id": min(first + chunk_size - 1, hi),
                    "status": "queued",
                    "attempts": 0,
                }
                for first in range(lo, hi + 1, chunk_size)
            ],
        )
    return int(job_id)


def claim_chunk(conn: Connection, *, now: float, lease: float, owner: str) -> Chunk | None:
    """Lease the oldest queued chunk of a live job whose lease is free."""
    k = job_chunks.c
    candidate = (
        select(k.id)
        .where(k.status == "queued", or_(k.lease_until.is_(None), k.lease_until < now))
        .order_by(k.job_id, k.id)
        .limit(1)
        .with_for_update(skip_locked=True)
    )
    row = conn.execute(
        update(job_chunks)
        .where(k.id.in_(candidate.scalar_subquery()))
        .values(lease_until=now + lease, lease_owner=owner, attempts=k.attempts + 1)
        .returning(k.id, k.job_id, k.first_id, k.last_id)
    ).first()
    if row is None:
        return None
    job = conn.execute(select(jobs.c.spec, jobs.c.status).where(jobs.c.id == row.job_id)).one()
    if job.status == "queued":
        conn.execute(
            update(jobs)
            .where(jobs.c.id == row.job_id, jobs.c.status == "queued")
            .values(status="running", started_at=now, updated_at=now)
        )
    return Chunk(row.id, row.job_id, row.first_id, row.last_id, job.spec)


def chunk_conversations(conn: Connection, chunk: Chunk) -> list[int]:
    """The ids of the conversations a chunk covers."""
    c = conversations.c
    return [
        cid
        for (cid,) in conn.execute(
            select(c.id)
            .where(c.id >= chunk.first_id, c.id <= chunk.last_id, *time_filter(chunk.spec))
            .order_by(c.id)
        )
    ]


def job_is_live(conn: Connection, job_id: int) -> bool:
    """False once a job was cancelled (or removed)."""
    status = conn.execute(select(jobs.c.status).where(jobs.c.id == job_id)).scalar()
    return status in ("queued", "running")


def finish_chunk(conn: Connection, chunk: Chunk, owner: str, *, done: int, failed: int) -> None:
    """Mark a chunk done, add its counts to the job, and finish the job after its last chunk."""
    k = job_chunks.c
    now = time.time()
    marked = conn.execute(
        update(job_chunks)
        .where(k.id == chunk.id, k.lease_owner == owner, k.status == "queued")
        .values(status="done", lease_until=None, lease_owner=None)
    )
    if marked.rowcount != 1:
        return  # lost the lease: another worker redoes this chunk (idempotently)
    j = jobs.c
    conn.execute(
        update(jobs)
        .where(j.id == chunk.job_id)
        .values(done=j.done + done, failed=j.failed + failed, updated_at=now)
    )
    left = conn.execute(
        select(func.count())
        .select_from(job_chunks)
        .where(k.job_id == chunk.job_id, k.status == "queued")
    ).scalar_one()
    if not left:
        conn.execute(
            update(jobs)
            .where(j.id == chunk.job_id, j.status == "running")
            .values(status="done", finished_at=now, updated_at=now)
        )


def retry_chunk_soon(conn: Connection, chunk: Chunk, owner: str, delay: float) -> None:
    """Give a chunk back (some conversations were busy); it is claimed again after `delay`."""
    k = job_chunks.c
    conn.execute(
        update(job_chunks)
        .where(k.id == chunk.id, k.lease_owner == owner)
        .values(lease_until=time.time() + delay, lease_owner=None)
    )


def cancel_job(conn: Connection, job_id: int) -> str | None:
    """Cancel a queued or running job; returns its status afterwards (None if unknown)."""
    now = time.time()
    j = jobs.c
    conn.execute(
        update(jobs)
        .where(j.id == job_id, j.status.in_(("queued", "running")))
        .values(status="cancelled", finished_at=now, updated_at=now)
    )
    conn.execute(
        update(job_chunks)
        .where(job_chunks.c.job_id == job_id, job_chunks.c.status == "queued")
        .values(status="cancelled")
    )
    status: str | None = conn.execute(select(j.status).where(j.id == job_id)).scalar()
    return status


def get_job(conn: Connection, job_id: int) -> dict[str, Any] | None:
    """One job row."""
    row = conn.execute(select(jobs).where(jobs.c.id == job_id)).first()
    return None if row is None else dict(row._mapping)


def list_jobs(
    conn: Connection, *, limit: int, before_id: int | None, status: str | None = None
) -> list[dict[str, Any]]:
    """Jobs newest first (by id), optionally of one status."""
    j = jobs.c
    query = select(jobs).order_by(j.id.desc()).limit(limit)
    if before_id is not None:
        query = query.where(j.id < before_id)
    if status is not None:
        query = query.where(j.status == status)
    return [dict(row._mapping) for row in conn.execute(query)]


def newest_versions(
    conn: Connection, slugs: list[str] | None, project: str | None = None
) -> list[list[Any]]:
    """[[slug, version]] of the newest active version of each (all active when None), of
    `project`'s expectations when given."""
    e = expectations.c
    query = active_versions()
    if slugs is not None:
        query = query.where(e.slug.in_(slugs))
    if project is not None:
        query = query.where(e.project == project)
    return [[slug, version] for slug, version in conn.execute(query.order_by(e.slug))]
