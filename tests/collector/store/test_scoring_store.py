"""How stored calls become the trajectory the matcher scores."""

from __future__ import annotations

import random
import time
from dataclasses import replace

from tooltrail.collector.bench.seed import conversation_batch
from tooltrail.collector.scorer import NOT_EXECUTED, trajectory
from tooltrail.collector.store.db import make_engine, migrate
from tooltrail.collector.store.persist import write_batches
from tooltrail.matcher import Trajectory, parse_expectation, score


def test_requested_but_never_executed_counts_as_a_failed_call(database_url: str) -> None:
    migrate(database_url)
    engine = make_engine(database_url)
    batch = conversation_batch(0, 2, random.Random(1), "t-")
    never_ran = replace(batch.calls[1], executed=False, span_id=f"{batch.calls[1].span_id}#0")
    batch = replace(batch, calls=(batch.calls[0], never_ran))
    with engine.begin() as conn:
        write_batches(conn, [batch], time.time())
        (turn,) = trajectory(conn, 1).turns
    assert [c.error for c in turn] == [None, NOT_EXECUTED]
    exp = parse_expectation({"calls": [{"name": turn[1].name, "error": False}]})
    (result,) = score(exp, Trajectory.from_calls(turn))
    assert result.passed is False
    engine.dispose()



def test_a_request_and_its_execution_count_once(database_url: str) -> None:
    from sqlalchemy import select

    from tooltrail.collector.store.tables import conversations

    migrate(database_url)
    engine = make_engine(database_url)
    batch = conversation_batch(0, 1, random.Random(1), "c-")
    (executed,) = batch.calls
    request = replace(executed, executed=False, span_id=f"{executed.span_id}#0")
    with engine.begin() as conn:
        write_batches(conn, [replace(batch, calls=(request, executed))], time.time())
        count = conn.execute(select(conversations.c.call_count)).scalar_one()
        (turn,) = trajectory(conn, 1).turns
    assert count == 1 and len(turn) == 1 and turn[0].error is None
    engine.dispose()


def test_mark_scored_uses_the_scored_change_seq_not_the_live_one(database_url: str) -> None:
    """Spans committed after the worker read a conversation must still be scored: marking uses
    the change_seq that was read (on SQLite the worker holds no row lock meanwhile)."""
    from sqlalchemy import select

    from tooltrail.collector.store.leases import conversation_facts, mark_scored
    from tooltrail.collector.store.tables import conversations

    migrate(database_url)
    engine = make_engine(database_url)
    c = conversations.c
    first = conversation_batch(0, 2, random.Random(1), "m-")
    with engine.begin() as conn:
        write_batches(conn, [first], time.time())
        (read,) = conversation_facts(conn, [1])
    later = replace(first, calls=tuple(replace(x, span_id=x.span_id + "ff") for x in first.calls))
    with engine.begin() as conn:  # committed between the read and the mark
        write_batches(conn, [later], time.time())
    with engine.begin() as conn:
        mark_scored(conn, [read])
        scored, change = conn.execute(select(c.scored_seq, c.change_seq)).one()
    assert scored == read.change_seq < change  # still dirty: the later spans get scored
    with engine.begin() as conn:  # an older read never moves the mark back
        mark_scored(conn, [replace(read, change_seq=read.change_seq - 1)])
        assert conn.execute(select(c.scored_seq)).scalar_one() == read.change_seq
    engine.dispose()
