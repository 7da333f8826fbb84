"""The composition root of `tooltrail serve`: the long-lived parts (store engines, writer,
ingest pipeline and its process pool, gRPC receiver, embedded worker, the children `/score`
matches in), built once from the
Settings and run together; collector.api.app serves them over HTTP."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from functools import partial

from sqlalchemy import Engine

from tooltrail.collector import conversation_view
from tooltrail.collector.api.auth import ApiKeyInterceptor
from tooltrail.collector.api.gauges import ExpectationGauges, SignalGauges
from tooltrail.collector.apikeys import ApiKeys
from tooltrail.collector.config import Settings
from tooltrail.collector.governance.redaction import load_policy
from tooltrail.collector.ingest import Ingest, Offload, Pipeline
from tooltrail.collector.metrics import Metrics
from tooltrail.collector.processes import DeadlineChildren, long_lived
from tooltrail.collector.receivers.codec import decode_body
from tooltrail.collector.receivers.grpc import GrpcReceiver
from tooltrail.collector.store import archive
from tooltrail.collector.store.db import WalCheckpointer, make_engine
from tooltrail.collector.store.rows import prepare
from tooltrail.collector.store.writer import Writer
from tooltrail.collector.worker import Worker, WorkerConfig
from tooltrail.collector.worker_process import WorkerProcess

SCORING_CHILDREN = 2  # /score requests matched at once; more wait for a child


def embedded_worker(settings: Settings, engine: Engine, metrics: Metrics) -> Worker | WorkerProcess:
    """The scoring worker `serve` runs: a child process by default, else a thread."""
    config = WorkerConfig.from_settings(settings)
    if settings.worker_process:
        return WorkerProcess(config, metrics)
    return Worker.from_config(engine, metrics, config)


@dataclass
class Service:
    """Every long-lived part of `serve`; `running()` starts them in order and stops them in
    reverse (the HTTP app's lifespan)."""

    settings: Settings
    metrics: Metrics
    engine: Engine  # writes (and the worker thread, when it is one)
    read_engine: Engine  # REST reads, never waiting on ingest
    checkpointer: WalCheckpointer
    writer: Writer
    offload: Offload
    ingest: Ingest
    keys: ApiKeys
    grpc_receiver: GrpcReceiver
    worker: Worker | WorkerProcess | None
    scorers: DeadlineChildren  # POST /api/v1/score matches in these, under its time budget

    @classmethod
    def build(cls, settings: Settings) -> Service:
        """The parts, wired; nothing runs until `running()`."""
        metrics = Metrics()
        engine = make_engine(settings.database_url, background_checkpoint=True)
        metrics.registry.register(ExpectationGauges(engine))
        metrics.registry.register(SignalGauges(
            engine, window=settings.signals_gauge_window_seconds,
            cap=settings.signals_gauge_versions))
        writer = Writer(
            engine,
            metrics,
            max_batch=settings.writer_max_batch,
            max_queue_bytes=settings.max_queue_bytes,
            max_group_spans=settings.writer_max_group_spans,
            errors_keep=settings.ingest_errors_keep,
            retry_after=settings.store_retry_seconds,
            concurrency=settings.writer_concurrency,
            count_shown=conversation_view.counts,
        )
        pipeline = Pipeline(
            decode=decode_body,
            prepare=partial(prepare, redact=load_policy(
                settings.redaction_rules, settings.redaction_secret,
                settings.span_attributes).apply),
            options=settings.extract_options(),
            limit=settings.max_request_bytes,
            archive=archive.pack if settings.archive_enabled else None,
        )
        offload = Offload(pipeline, settings.ingest_processes, settings.ingest_inline_bytes,
                          metrics)
        ingest = Ingest(writer, metrics, offload)
        keys = ApiKeys.parse(settings.api_keys, settings.api_keys_file)
        grpc_receiver = GrpcReceiver(
            ingest,
            settings.host,
            settings.grpc_port,
            settings.max_request_bytes,
            interceptors=[ApiKeyInterceptor(keys)] if keys.enabled else [],
        )
        return cls(
            settings=settings,
            metrics=metrics,
            engine=engine,
            read_engine=make_engine(settings.database_url, read_only=True),
            checkpointer=WalCheckpointer(settings.database_url, metrics=metrics,
                                         restart_bytes=settings.sqlite_wal_restart_bytes),
            writer=writer,
            offload=offload,
            ingest=ingest,
            keys=keys,
            grpc_receiver=grpc_receiver,
            worker=embedded_worker(settings, engine, metrics) if settings.worker else None,
            scorers=DeadlineChildren(SCORING_CHILDREN, "score"),  # started when first used
        )

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Service]:
        """Start every part (the writer before what feeds it), yield, stop them in reverse;
        the engines are disposed last."""
        async with AsyncExitStack() as stack:
            await stack.enter_async_context(self.checkpointer)
            await stack.enter_async_context(self.writer)
            await stack.enter_async_context(self.offload)
            await stack.enter_async_context(self.grpc_receiver)
            if self.worker is not None:
                await stack.enter_async_context(self.worker)
            long_lived()  # started: what exists now lasts as long as the server
            stack.callback(gc.unfreeze)  # stopped: collectable again (a test's process goes on)
            yield self
        await asyncio.to_thread(self.scorers.close)
        self.engine.dispose()
        self.read_engine.dispose()
