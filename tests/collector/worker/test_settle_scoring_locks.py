"""Settle-scoring reads a conversation's history without holding its row: the writer adds
turns to a conversation that is being scored without waiting for the scoring to finish."""

from __future__ import annotations

import random
import threading
import time
from dataclasses import replace
from typing import Any

import pytest
from sqlalchemy import func, select

from tooltrail.collector.bench.seed import conversation_batch
from tooltrail.collector.metrics import Metrics
from tooltrail.collector.model import Batch
from tooltrail.collector.production import signals
from tooltrail.collector.store.db import make_engine
from tooltrail.collector.store.persist import write_batches
from tooltrail.collector.store.tables import conversations, signal_turns
from tooltrail.collector.worker import Worker


def later_turn(batch: Batch, n: int) -> Batch:
    """Another turn (trace) of the same conversation as `batch`."""
    trace = f"{n:032x}"
    (info,) = batch.traces
    calls = tuple(replace(c, trace_id=trace, start_ns=c.start_ns + n, end_ns=c.end_ns + n)
                  for c in batch.calls)
    return replace(batch, calls=calls, traces=(replace(
        info, trace_id=trace, turn_key=trace, start_ns=info.start_ns + n,
        end_ns=info.end_ns + n),))


def test_the_writer_adds_turns_while_the_worker_reads_the_conversation(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = make_engine(pg_url)
    first = conversation_batch(0, 3, random.Random(1), "lock-")
    with engine.begin() as conn:
        write_batches(conn, [first], time.time() - 10)
    reading, go_on = threading.Event(), threading.Event()
    real = signals.trajectory_calls

    def paused(*args: Any, **kwargs: Any) -> Any:  # the worker stops while reading calls
        found = real(*args, **kwargs)
        reading.set()
        go_on.wait(30)
        return found

    monkeypatch.setattr(signals, "trajectory_calls", paused)
    worker = Worker(engine, Metrics(), settle_seconds=1, poll_seconds=0.1, batch=10,
                    lease_seconds=60)
    claimed: list[int] = []
    scoring = threading.Thread(target=lambda: claimed.append(worker.score_settled()))
    scoring.start()
    try:
        assert reading.wait(30), "the worker never read the conversation's calls"
        started = time.monotonic()
        with engine.begin() as conn:  # fails at once if the worker holds a conflicting lock
            conn.exec_driver_sql("SET LOCAL lock_timeout = '3s'")
            write_batches(conn, [later_turn(first, 2)], time.time())
        assert time.monotonic() - started < 3
    finally:
        go_on.set()
        scoring.join(30)
    assert claimed == [1]
    c = conversations.c
    with engine.connect() as conn:
        scored, change, turns = conn.execute(
            select(c.scored_seq, c.change_seq, c.turn_count)).one()
    # what was read is marked scored, the turn added meanwhile leaves it to score again
    assert (scored, turns) == (change - 1, 2)
    monkeypatch.setattr(signals, "trajectory_calls", real)
    with engine.begin() as conn:  # settled now
        conn.execute(conversations.update().values(last_seen=time.time() - 10))
    assert worker.score_settled() == 1
    with engine.connect() as conn:
        scored, change = conn.execute(select(c.scored_seq, c.change_seq)).one()
        kept = conn.execute(select(func.count()).select_from(signal_turns)).scalar_one()
    assert (scored, kept) == (change, 2)
    engine.dispose()


def test_an_expired_lease_is_not_owned_any_more(database_url: str) -> None:
    """What the worker writes in its second transaction is only what its lease still covers:
    once expired, another worker or a rescoring chunk may have taken the conversation."""
    from tooltrail.collector.store import leases
    from tooltrail.collector.store.db import migrate

    migrate(database_url)
    engine = make_engine(database_url)
    with engine.begin() as conn:
        write_batches(conn, [conversation_batch(0, 2, random.Random(1), "lease-")],
                      time.time() - 10)
    now = time.time()
    with engine.begin() as conn:
        claimed = leases.claim_dirty(conn, now=now, settle=1, lease=60, limit=10, owner="w1")
    with engine.begin() as conn:
        assert leases.still_owned(conn, claimed, "w1", now=now + 59) == set(claimed) == {1}
        assert leases.still_owned(conn, claimed, "w2", now=now + 59) == set()
        assert leases.still_owned(conn, claimed, "w1", now=now + 61) == set()
    engine.dispose()
