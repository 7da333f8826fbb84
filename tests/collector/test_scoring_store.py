"""How stored calls become the trajectory the matcher scores."""

from __future__ import annotations

import random
import time
from dataclasses import replace

from collector.bench.seed import conversation_batch
from collector.store.db import make_engine, migrate
from collector.store.persist import write_batches
from collector.store.scoring import NOT_EXECUTED, trajectory
from matcher import Trajectory, parse_expectation, score


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

    from collector.store.tables import conversations

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
