"""Every captured framework through the real writer, on SQLite and PostgreSQL.

Each fixture's spans are split into several OTLP requests, deepest spans first (children
arrive before their roots, LLM spans and tool spans in different requests), each written in a
transaction of its own. The stored conversation read back through the REST view's query and
the worker's trajectory equals the ground truth: re-keying, reconciliation and steps work
across requests.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from sqlalchemy import Engine, delete, select

from tests.collector.extract.test_extract_fixtures import (
    FIXTURES,
    NO_CONVERSATION_ID,
    expected_turns,
    load,
    pending,
)
from tooltrail.collector import conversation_view, scorer
from tooltrail.collector.extract import extract
from tooltrail.collector.store import queries
from tooltrail.collector.store.db import make_engine, migrate
from tooltrail.collector.store.persist import write_batches
from tooltrail.collector.store.tables import conversations, tool_calls, turns

PARTS = 4


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def depth_first_requests(request: ExportTraceServiceRequest, parts: int) -> list[Any]:
    """The request's spans in `parts` requests, deepest spans first (roots come last)."""
    spans: list[tuple[Any, Any, Span]] = [
        (rs.resource, ss.scope, s)
        for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans
    ]
    parent = {s.span_id: s.parent_span_id for _, _, s in spans}

    def depth(span: Span) -> int:
        d, p = 0, span.parent_span_id
        while p in parent:
            d, p = d + 1, parent[p]
        return d

    spans.sort(key=lambda t: (-depth(t[2]), t[2].start_time_unix_nano))
    size = -(-len(spans) // parts)
    out = []
    for i in range(0, len(spans), size):
        part = ExportTraceServiceRequest()
        for resource, scope, span in spans[i : i + size]:
            rs = part.resource_spans.add()
            rs.resource.CopyFrom(resource)
            ss = rs.scope_spans.add()
            ss.scope.CopyFrom(scope)
            ss.spans.add().CopyFrom(span)
        out.append(part)
    return out


@pytest.fixture(scope="module")
def store(module_database_url: str) -> Iterator[Engine]:
    migrate(module_database_url)
    engine = make_engine(module_database_url)
    yield engine
    engine.dispose()


@pytest.fixture
def engine(store: Engine) -> Engine:
    """The module's database, emptied (fixtures share trace ids and conversation ids)."""
    with store.begin() as conn:
        for table in (tool_calls, turns, conversations):
            conn.execute(delete(table))
    return store


def stored_turns(engine: Engine, key: str) -> tuple[dict[str, Any], list[list[dict[str, Any]]]]:
    with engine.connect() as conn:
        conversation = queries.get_conversation(conn, key)
        assert conversation is not None, key
        turns = conversation_view.conversation_turns(conn, conversation["id"])
        trajectory = scorer.trajectory(conn, conversation["id"])
    rest = [
        [{"name": c["name"], "arguments": c["arguments"], "error": c["error"] is not None,
          "step": c["step"], "call_id": c["call_id"], "status": c["status"]}
         for c in turn["tool_calls"]]
        for turn in turns
    ]
    # the matcher sees a pending or rejected call, or a request never executed, as not executed
    # (a failed call)
    worker = [
        [{"name": c.name, "arguments": c.arguments, "step": c.step, "call_id": c.call_id,
          "error": c.failed} for c in turn]
        for turn in trajectory.turns
    ]
    unexecuted = {"pending", "rejected", "requested"}
    assert worker == [
        [{k: v for k, v in {**c, "error": c["error"] or c["status"] in unexecuted}.items()
          if k != "status"} for c in turn]
        for turn in rest
    ]
    assert all(c["executed"] == (c["status"] not in unexecuted)
               for turn in turns for c in turn["tool_calls"])
    return conversation, rest


@pytest.mark.parametrize("name", pending(FIXTURES))
def test_fixture_split_children_first_stores_the_ground_truth(engine: Engine, name: str) -> None:
    request, expected = load(name)
    for part in depth_first_requests(request, PARTS):
        with engine.begin() as conn:
            write_batches(conn, [extract(part)], time.time())
    with engine.begin() as conn:  # a resent request changes nothing
        write_batches(conn, [extract(request)], time.time())
    want = expected_turns(expected)
    with engine.connect() as conn:
        keys = sorted(conn.execute(select(conversations.c.key)).scalars())
    if name in NO_CONVERSATION_ID:
        assert len(keys) == len(want)
        got = []
        for key in keys:
            conversation, turns = stored_turns(engine, key)
            assert conversation["turn_count"] == 1
            got.extend(turns)
        assert sorted(map(canonical, got)) == sorted(map(canonical, want))
        return
    alone = [i for i, t in enumerate(expected["turns"]) if t.get("conversation_id", 1) is None]
    assert len(keys) == 1 + len(alone) and expected["conversation_id"] in keys
    for key in set(keys) - {expected["conversation_id"]}:  # turns keyed by their own trace
        conversation, turns = stored_turns(engine, key)
        assert conversation["turn_count"] == 1 and turns[0] in [want[i] for i in alone]
    want = [turn for i, turn in enumerate(want) if i not in alone]
    conversation, turns = stored_turns(engine, expected["conversation_id"])
    assert conversation["turn_count"] == len(want)
    assert turns == want
