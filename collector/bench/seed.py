"""Synthetic stored conversations for scoring tests and benchmarks (written through the real
writer path, `persist.write_batches`, without OTLP in between)."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator, Sequence

from sqlalchemy import Engine

from tooltrail.collector.model import KEY_FROM_ROOT, Batch, ToolCall, TraceInfo
from tooltrail.collector.store.persist import write_batches

TOOLS = ("lookup_order", "get_customer", "search_kb", "issue_refund", "send_email")


def conversation_batch(index: int, calls: int, rng: random.Random, prefix: str,
                       versions: Sequence[str] = ()) -> Batch:
    """One conversation of one turn with `calls` tool calls. With `versions`, conversation
    `index` is of version `versions[index % len(versions)]` (`service.version`) and its key
    names its scenario and version (`conv-0000007@v2`), so consecutive ones pair up as the
    same scenario of each version."""
    trace_id = f"{index + 1:032x}"
    start = 1_700_000_000_000_000_000 + index * 1_000_000_000
    made = []
    for i in range(calls):
        name = TOOLS[i % len(TOOLS)] if rng.random() > 0.1 else "delete_account"
        made.append(ToolCall(
            trace_id=trace_id, span_id=f"{index + 1:08x}{i:08x}", parent_span_id=None,
            name=name, call_id=f"call_{i}", arguments={"order_id": index, "n": i},
            arguments_raw=None, result={"ok": True}, error=None, status="ok",
            start_ns=start + i * 1000, end_ns=start + i * 1000 + 500, convention="genai",
        ))
    key, attributes = f"{prefix}{index:07d}", {}
    if versions:
        version = versions[index % len(versions)]
        key, attributes = f"{prefix}{index // len(versions):07d}@{version}", {
            "service.version": version}
    info = TraceInfo(
        trace_id=trace_id, turn_key=trace_id, conversation_key=key,
        key_rank=KEY_FROM_ROOT, service="bench-agent", agents=frozenset({"support"}),
        start_ns=start, end_ns=start + calls * 1000, has_agent_root=True,
        attributes=attributes,
    )
    return Batch(tuple(made), (info,), span_count=calls + 1)


def batches(count: int, calls: int, seed: int = 7, prefix: str = "conv-",
            versions: Sequence[str] = ()) -> Iterator[Batch]:
    """`count` synthetic conversations, reproducibly."""
    rng = random.Random(seed)
    for index in range(count):
        yield conversation_batch(index, calls, rng, prefix, versions)


def seed(engine: Engine, count: int, calls: int = 10, *, per_transaction: int = 500,
         prefix: str = "conv-", versions: Sequence[str] = ()) -> float:
    """Store `count` conversations (`versions`: see `conversation_batch`); returns the
    seconds it took."""
    started = time.perf_counter()
    pending: list[Batch] = []
    for batch in batches(count, calls, prefix=prefix, versions=versions):
        pending.append(batch)
        if len(pending) == per_transaction:
            with engine.begin() as conn:
                write_batches(conn, pending, time.time())
            pending = []
    if pending:
        with engine.begin() as conn:
            write_batches(conn, pending, time.time())
    return time.perf_counter() - started
