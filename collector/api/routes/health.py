"""Liveness, readiness and Prometheus metrics."""

from __future__ import annotations

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from collector.api.deps import State
from collector.api.errors import ApiError
from collector.store.db import at_head

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """The process is alive."""
    return {"status": "ok"}


@router.get("/readyz", responses={503: {"description": "not ready"}})
def readyz(app: State) -> dict[str, str]:
    """The database is reachable and its schema is at the newest migration."""
    try:
        with app.engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        if not at_head(app.engine):
            raise ApiError(503, "database schema is not at the newest migration; run migrate")
    except SQLAlchemyError as exc:
        raise ApiError(503, f"database unreachable: {exc.__class__.__name__}") from exc
    return {"status": "ready"}


@router.get("/metrics", response_class=Response)
def metrics(app: State) -> Response:
    """Prometheus text format."""
    return Response(generate_latest(app.metrics.registry), media_type=CONTENT_TYPE_LATEST)
