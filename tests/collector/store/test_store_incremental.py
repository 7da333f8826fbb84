"""Group commits bring conversations up to date incrementally (stored counts plus what the
group inserted): whatever the order, split, grouping and resending of the spans, the stored
counts, times and agents equal a recount from the rows."""

from __future__ import annotations

import random
import time

from sqlalchemy import select

from tests.spans import ToolStep, agent_turn, capture, to_request
from tooltrail.collector.extract import extract
from tooltrail.collector.store.db import make_engine, migrate
from tooltrail.collector.store.persist import _recounted, write_batches
from tooltrail.collector.store.tables import conversations


def test_incremental_counts_equal_a_recount(database_url: str) -> None:
    rng = random.Random(20)
    tp, exporter = capture()
    for i in range(24):
        steps = [ToolStep(f"tool{rng.randrange(3)}", {"i": i, "k": k},
                          None if rng.random() < 0.3 else k,
                          raises="boom" if rng.random() < 0.2 else None)
                 for k in range(rng.randrange(4))]
        agent_turn(tp, f"conv-{rng.randrange(5)}", steps, agent=rng.choice(["a", "b", "c"]))
    spans = list(exporter.get_finished_spans())
    rng.shuffle(spans)  # children before their roots: traces keyed by trace id, re-keyed later
    requests = [spans[i : i + 7] for i in range(0, len(spans), 7)]
    requests += rng.sample(requests, 4)  # resends, some in the same group as the original
    rng.shuffle(requests)
    migrate(database_url)
    engine = make_engine(database_url)
    try:
        for start in range(0, len(requests), 3):
            with engine.begin() as conn:
                write_batches(conn, [extract(to_request(r)) for r in requests[start : start + 3]],
                              time.time())
        with engine.connect() as conn:
            c = conversations.c
            stored = {row.id: (row.turn_count, row.call_count, row.error_count, row.start_ns,
                               row.end_ns, sorted(row.agents)) for row in conn.execute(
                select(c.id, c.turn_count, c.call_count, c.error_count, c.start_ns, c.end_ns,
                       c.agents))}
            recounted = _recounted(conn, sorted(stored))
        assert {cid: tuple(v) for cid, v in recounted.items()} == stored
        assert sum(v[0] for v in stored.values()) == 24
    finally:
        engine.dispose()
