"""Overload: offered load at twice what the server sustains, open loop, for a bounded time
(TOOLTRAIL_OVERLOAD_SECONDS, 10 s by default; the issue's full run is 60 s): the server does
not crash, its memory stays bounded, clients get retryable answers (503 / UNAVAILABLE with a
retry hint) and, retrying, nothing acknowledged is lost."""

from __future__ import annotations

import asyncio
import os

import pytest

from tests.conftest import fresh_database
from tests.server import running_server
from tooltrail.collector.bench.ingest import missing_acknowledged
from tooltrail.collector.bench.load import (
    GrpcSender,
    HttpSender,
    Send,
    Stats,
    run_clients,
    run_open_loop,
)
from tooltrail.collector.bench.memory import MemorySampler
from tooltrail.collector.bench.traffic import RequestFactory, Shape
from tooltrail.collector.store.db import make_engine

MB = 1024 * 1024
SERVER_RSS_LIMIT = 350 * MB  # the server process
TREE_PSS_LIMIT = 450 * MB  # the server and its ingest workers, shared pages counted once


async def overload(grpc_endpoint: str, base_url: str, seconds: float) -> tuple[float, Stats,
                                                                               RequestFactory]:
    """Measure the sustainable rate, then offer twice it for `seconds`."""
    senders = [GrpcSender(grpc_endpoint), HttpSender(base_url, connections=64),
               GrpcSender(grpc_endpoint), HttpSender(base_url, connections=64)]
    sends: list[Send] = list(senders)
    try:
        probe = RequestFactory(Shape(spans=500))
        sustained = await run_clients(sends, probe, seconds=4.0, max_requests=10_000)
        rate = 2 * sustained.acked_requests / sustained.seconds
        factory = RequestFactory(Shape(spans=500))
        stats = await run_open_loop(sends, factory, rate=rate, seconds=seconds,
                                    max_requests=100_000, grace=90.0)
        return rate * factory.span_count, stats, factory
    finally:
        for s in senders:
            await s.close()


@pytest.mark.slow
def test_twice_the_sustainable_load(tmp_path: object) -> None:
    seconds = float(os.environ.get("TOOLTRAIL_OVERLOAD_SECONDS", "10"))
    url = next(fresh_database("sqlite", tmp_path))  # type: ignore[arg-type]
    with running_server(url, "--max-queue-bytes", str(16 * MB)) as server:
        sampler = MemorySampler(server.process.pid).start()
        try:
            offered, stats, factory = asyncio.run(
                overload(server.grpc_endpoint, server.base_url, seconds))
        finally:
            sampler.stop()
        alive = server.process.poll() is None
        with server.client() as client:
            healthy = client.get("/healthz").status_code == 200
        engine = make_engine(url)
        missing = missing_acknowledged(engine, factory, stats)
        engine.dispose()
    print(f"\noverload {seconds:.0f}s: offered {offered:,.0f} spans/s, acknowledged "
          f"{stats.spans_per_second:,.0f} spans/s ({stats.acked_requests}/{stats.sent} requests "
          f"acknowledged, the rest ran out of retries),"
          f" retryable answers {stats.retryable}, refused {stats.refused}, transport errors "
          f"{stats.transport_errors}, missing {missing}, peak RSS server "
          f"{sampler.peak_main / MB:.0f} MB, with ingest workers {sampler.peak_total / MB:.0f} MB "
          f"(PSS {sampler.peak_pss / MB:.0f} MB)")
    assert alive and healthy
    assert stats.retryable > 0, "the load did not overload the server"
    assert stats.refused == 0, stats.messages
    assert missing == 0
    # what was never acknowledged (its retries ran out while the overload lasted) got only
    # retryable answers: the client knows to resend it, nothing was silently dropped
    assert stats.transport_errors == 0, stats.messages
    assert sampler.peak_main < SERVER_RSS_LIMIT
    assert sampler.peak_pss < TREE_PSS_LIMIT
