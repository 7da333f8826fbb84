"""The application: wires store, writer, ingest, receivers, worker and routes together."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial

from fastapi import FastAPI
from sqlalchemy import Engine

from collector import __version__
from collector.api import errors, openapi
from collector.api.auth import ApiKeyInterceptor, ApiKeyMiddleware
from collector.api.deps import AppState
from collector.api.gauges import ExpectationGauges, SignalGauges
from collector.api.routes import (
    capture,
    conversations,
    expectations,
    health,
    jobs,
    results,
    score,
    signals,
)
from collector.auth import ApiKeys
from collector.config import Settings
from collector.extract import ExtractOptions
from collector.governance.redaction import load_policy
from collector.ingest import Ingest, Offload, Pipeline
from collector.metrics import Metrics
from collector.receivers import http as http_receiver
from collector.receivers.codec import decode_body
from collector.receivers.grpc import GrpcReceiver
from collector.store import archive
from collector.store.db import WalCheckpointer, make_engine
from collector.store.rows import prepare
from collector.store.writer import Writer
from collector.ui import routes as ui
from collector.worker import Worker, WorkerConfig
from collector.worker_process import WorkerProcess

log = logging.getLogger(__name__)


def embedded_worker(settings: Settings, engine: Engine, metrics: Metrics) -> Worker | WorkerProcess:
    """The scoring worker `serve` runs: a child process by default, else a thread."""
    config = WorkerConfig.from_settings(settings)
    if settings.worker_process:
        return WorkerProcess(config, metrics)
    return Worker.from_config(engine, metrics, config)


def create_app(settings: Settings) -> FastAPI:
    """The FastAPI app; its lifespan runs the writer, the gRPC receiver and maybe a worker."""
    metrics = Metrics()
    engine = make_engine(settings.database_url, background_checkpoint=True)
    checkpointer = WalCheckpointer(settings.database_url)
    metrics.registry.register(ExpectationGauges(engine))
    metrics.registry.register(SignalGauges(engine, window=settings.signals_gauge_window_seconds,
                                           cap=settings.signals_gauge_versions))
    read_engine = make_engine(settings.database_url, read_only=True)
    writer = Writer(
        engine,
        metrics,
        max_batch=settings.writer_max_batch,
        max_queue_bytes=settings.max_queue_bytes,
        max_group_spans=settings.writer_max_group_spans,
        errors_keep=settings.ingest_errors_keep,
        retry_after=settings.store_retry_seconds,
        concurrency=settings.writer_concurrency,
    )
    pipeline = Pipeline(
        decode=decode_body,
        prepare=partial(prepare, redact=load_policy(
            settings.redaction_rules, settings.redaction_secret, settings.span_attributes).apply),
        options=ExtractOptions(
            conversation_keys=tuple(settings.conversation_keys),
            keep_plumbing=settings.keep_plumbing,
        ),
        limit=settings.max_request_bytes,
        archive=archive.pack if settings.archive_enabled else None,
    )
    offload = Offload(pipeline, settings.ingest_processes, settings.ingest_inline_bytes, metrics)
    ingest = Ingest(writer, metrics, offload)
    keys = ApiKeys.parse(settings.api_keys, settings.api_keys_file)
    grpc_receiver = GrpcReceiver(
        ingest,
        settings.host,
        settings.grpc_port,
        settings.max_request_bytes,
        interceptors=[ApiKeyInterceptor(keys)] if keys.enabled else [],
    )
    worker = embedded_worker(settings, engine, metrics) if settings.worker else None

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            await stack.enter_async_context(checkpointer)
            await stack.enter_async_context(writer)
            await stack.enter_async_context(offload)
            await stack.enter_async_context(grpc_receiver)
            if worker is not None:
                await stack.enter_async_context(worker)
            app.state.grpc_port = grpc_receiver.port
            yield
        engine.dispose()
        read_engine.dispose()

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
    app.state.grpc_receiver = grpc_receiver  # `serve` binds it before serving (see cli)
    app.state.tooltrail = AppState(
        settings=settings,
        engine=engine,
        metrics=metrics,
        wake_worker=worker.wake if worker is not None else None,
        read_engine=read_engine,
    )
    errors.install(app)
    openapi.install(app)
    app.add_middleware(ApiKeyMiddleware, keys=keys)
    app.include_router(http_receiver.router(ingest, settings.max_request_bytes))
    app.include_router(capture.router(ingest, settings))
    for module in (health, conversations, expectations, results, score, jobs, signals, ui):
        app.include_router(module.router)
    return app
