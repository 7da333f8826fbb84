"""The FastAPI app: the OTLP/HTTP receiver, the REST API and the web view over the parts of a
collector.service.Service, whose `running()` is the app's lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from tooltrail.collector import __version__
from tooltrail.collector.api import errors, openapi
from tooltrail.collector.api.auth import ApiKeyMiddleware
from tooltrail.collector.api.deps import AppState
from tooltrail.collector.api.routes import (
    capture,
    conversations,
    expectations,
    health,
    jobs,
    results,
    score,
    signals,
)
from tooltrail.collector.config import Settings
from tooltrail.collector.receivers import http as http_receiver
from tooltrail.collector.service import Service
from tooltrail.collector.ui import routes as ui


def create_app(settings: Settings, service: Service | None = None) -> FastAPI:
    """The app over `service` (built from `settings` when not given); its lifespan runs it."""
    service = service if service is not None else Service.build(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with service.running():
            yield

    app = FastAPI(
        title="tooltrail",
        version=__version__,
        lifespan=lifespan,
        description="OpenTelemetry trace collector that scores whether AI agents call the "
        "right tools.",
        docs_url=None,  # openapi.install serves Swagger UI from the package
        redoc_url=None,
        generate_unique_id_function=openapi.operation_id,
    )
    app.state.service = service  # `serve` binds its gRPC port before serving (see cli)
    worker = service.worker
    app.state.tooltrail = AppState(
        settings=settings,
        engine=service.engine,
        metrics=service.metrics,
        wake_worker=worker.wake if worker is not None else None,
        read_engine=service.read_engine,
        scorers=service.scorers,
    )
    errors.install(app)
    openapi.install(app)
    app.add_middleware(ApiKeyMiddleware, keys=service.keys)
    app.include_router(http_receiver.router(service.ingest, settings.max_request_bytes))
    app.include_router(capture.router(service.ingest, settings))
    for module in (health, conversations, expectations, results, score, jobs, signals, ui):
        app.include_router(module.router)
    return app
