"""What routes get from the app: the store, settings, the worker's wake-up, pagination."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import Depends, Query, Request
from sqlalchemy import Connection, Engine

from tooltrail.collector.api.convert import rfc3339 as rfc3339  # where routes import it
from tooltrail.collector.api.convert import rfc3339_ns as rfc3339_ns
from tooltrail.collector.api.errors import ApiError
from tooltrail.collector.config import Settings
from tooltrail.collector.metrics import Metrics
from tooltrail.collector.processes import DeadlineChildren
from tooltrail.collector.projects import project_problem


@dataclass
class AppState:
    """Long-lived parts the routes use."""

    settings: Settings
    engine: Engine
    metrics: Metrics
    wake_worker: Any = None  # callable or None when no embedded worker runs
    read_engine: Engine | None = None  # the separate read path (defaults to `engine`)
    scorers: DeadlineChildren | None = None  # the children /score matches in


def state(request: Request) -> AppState:
    """The AppState of the running app."""
    found: AppState = request.app.state.tooltrail
    return found


def read_conn(request: Request) -> Iterator[Connection]:
    """A connection for reads, from the read engine so that reads never wait on ingest."""
    app = state(request)
    with (app.read_engine or app.engine).connect() as conn:
        yield conn


def write_conn(request: Request) -> Iterator[Connection]:
    """A connection in a transaction, committed when the route returns."""
    with state(request).engine.begin() as conn:
        yield conn


ReadConn = Annotated[Connection, Depends(read_conn)]
# scope="function": the transaction commits before the answer is sent, so a success answer
# means the write is committed and a failed commit is answered as the error it is (FastAPI
# would otherwise run the code after `yield` once the response has gone).
WriteConn = Annotated[Connection, Depends(write_conn, scope="function")]
State = Annotated[AppState, Depends(state)]


def project_param(
    request: Request,
    project: Annotated[str | None, Query(description=(
        "the project (conversation keys and expectations are scoped by it); default: the "
        "configured default project"), examples=["default"])] = None,
) -> str:
    """The project a request names (`?project=`), else the configured default; 400 when it
    is not a project name."""
    return resolve_project(state(request).settings, project)


def resolve_project(settings: Settings, project: str | None) -> str:
    """`project`, else `settings.project`; ApiError (400) when it is not a project name."""
    if project is None:
        return settings.project
    problem = project_problem(project)
    if problem is not None:
        raise ApiError(400, problem, {"field": "project"})
    return project


Project = Annotated[str, Depends(project_param)]
Limit = Annotated[int, Query(ge=1, le=1000, description="page size")]
CursorParam = Annotated[str | None, Query(description="opaque cursor from next_cursor")]
TimeParam = Annotated[
    str | None, Query(description="RFC 3339 time", json_schema_extra={"format": "date-time"})
]
VersionParam = Annotated[int | None, Query(ge=1, le=2**31 - 1, description="a version number")]


def encode_cursor(value: int) -> str:
    """An opaque cursor for a position."""
    return base64.urlsafe_b64encode(f"v1:{value}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> int | None:
    """The position an opaque cursor names; 400 when it is not one of ours."""
    if not cursor:
        return None
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        prefix, value = text.split(":", 1)
        if prefix != "v1":
            raise ValueError(prefix)
        return int(value)
    except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
        raise ApiError(400, "cursor: not a cursor this API issued") from exc


def page(
    rows: list[dict[str, Any]], limit: int, key: str = "id"
) -> tuple[list[dict[str, Any]], str | None]:
    """Split `limit + 1` fetched rows into the page and its next_cursor (None on the last)."""
    if len(rows) <= limit:
        return rows, None
    rows = rows[:limit]
    return rows, encode_cursor(rows[-1][key])


def parse_time(value: str | None, field: str) -> float | None:
    """An RFC 3339 time parameter as unix seconds; 400 naming the field when it is not one."""
    if value is None:
        return None
    text = value.strip().upper().replace("Z", "+00:00")
    text = re.sub(r"T(\d\d:\d\d):60", r"T\1:59", text)  # a leap second
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError as exc:
        raise ApiError(400, f"{field}: not an RFC 3339 time: {value!r}") from exc
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    # clamp to what a 64-bit nanosecond column can hold (1970 … 2255)
    return min(max(parsed.timestamp(), 0.0), 9_000_000_000.0)
