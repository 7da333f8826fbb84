"""Liveness, readiness and Prometheus metrics."""

from __future__ import annotations

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from tooltrail.collector.api.deps import State
from tooltrail.collector.api.errors import ApiError
from tooltrail.collector.health import readiness

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """The process is alive."""
    return {"status": "ok"}


@router.get("/readyz", responses={503: {"description": "not ready"}})
def readyz(app: State) -> dict[str, str]:
    """The database is reachable and its schema is at the newest migration."""
    why = readiness(app.engine)
    if why is not None:
        raise ApiError(503, why)
    return {"status": "ready"}


@router.get("/metrics", response_class=Response)
def metrics(app: State) -> Response:
    """Prometheus text format."""
    return Response(generate_latest(app.metrics.registry), media_type=CONTENT_TYPE_LATEST)
