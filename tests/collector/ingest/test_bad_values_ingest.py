"""Values no store can hold, on both stores: the span holding one is rejected alone (in OTLP
partial_success, docs/otlp.md), the other spans of its request are stored, and a request that can
never succeed never gets a retryable answer — nor makes the requests committed with it fail."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.collector.receivers.test_ingest_limits import grpc_export, merged, post, tool_names, turn
from tests.server import Server, running_server
from tooltrail.collector.errors import InvalidPayload, Overloaded
from tooltrail.collector.extract import extract
from tooltrail.collector.metrics import Metrics
from tooltrail.collector.store.db import make_engine, migrate
from tooltrail.collector.store.persist import CALL_FIELDS, PreparedBatch, prepare
from tooltrail.collector.store.writer import Writer

NEVER = 2**64 - 1  # the largest fixed64: no signed 64-bit time column holds it


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url) as s:
        yield s


def with_time(request: ExportTraceServiceRequest, field: str, value: int) -> None:
    """Set `field` of the request's tool span (the one the SDK ended first)."""
    spans = request.resource_spans[0].scope_spans[0].spans
    (tool,) = [s for s in spans if s.name.startswith("execute_tool")]
    setattr(tool, field, value)


@pytest.mark.parametrize("field", ["start_time_unix_nano", "end_time_unix_nano"])
def test_out_of_range_time_rejects_only_its_span(server: Server, field: str) -> None:
    good = turn(f"time-good-{field}")
    bad = turn(f"time-bad-{field}", tool="later")
    with_time(bad, field, NEVER)
    body = merged(good, bad).SerializeToString()
    response = post(server, body)
    assert response.status_code == 200, response.content
    answer = ExportTraceServiceResponse.FromString(response.content)
    assert answer.partial_success.rejected_spans == 1
    assert f"{field} {NEVER} is out of range" in answer.partial_success.error_message
    assert grpc_export(server, body).partial_success.rejected_spans == 1
    assert tool_names(server, f"time-good-{field}") == ["lookup"]
    # the bad turn's other spans (its agent root with the conversation key) are kept
    assert tool_names(server, f"time-bad-{field}") == []


def _good(key: str) -> PreparedBatch:
    return prepare(extract(turn(key)))


def test_one_failing_item_of_a_group_fails_alone(database_url: str) -> None:
    """A value that only the store finds wrong (here a time past the signed 64-bit range, put
    in a prepared row directly: SQLite raises OverflowError, PostgreSQL's COPY raises a bare
    psycopg error) fails its own request with a permanent error; the group's others commit."""
    migrate(database_url)
    engine = make_engine(database_url)
    start = CALL_FIELDS.index("start_ns")
    good = _good("group-bad")
    (row,) = good.calls
    bad = replace(good, calls=((*row[:start], NEVER, *row[start + 1:]),))
    metrics = Metrics()

    async def scenario() -> list[BaseException | None]:
        async with Writer(engine, metrics) as writer:
            outcomes = await asyncio.gather(
                writer.write(_good("group-a"), []), writer.write(bad, []),
                writer.write(_good("group-b"), []), return_exceptions=True)
        return list(outcomes)  # type: ignore[arg-type]

    first, failed, last = asyncio.run(scenario())
    engine.dispose()
    assert first is None and last is None, (first, last)
    assert isinstance(failed, InvalidPayload) and not isinstance(failed, Overloaded), failed
    failures = metrics.registry.get_sample_value("tooltrail_writer_failures_total",
                                                 {"kind": "permanent"})
    assert failures == 2  # the shared group, then the request at fault alone
    with running_server(database_url) as s:
        for key in ("group-a", "group-b"):
            assert tool_names(s, key) == ["lookup"]
        assert httpx.get(f"{s.base_url}/api/v1/conversations/group-bad").status_code == 404
