"""Signals read without results (`scorer.trajectories(results=False)`) and without arguments
(`scorer.outcomes` over `trajectory_calls(arguments=False)`, what `record` reads when scoring
read nothing) count exactly what the full trajectories count: on every real capture
(tests/captures, as extracted with and without plumbing) and on the seeded random corpus of
the extraction's differential test, each request written apart, on both stores."""

from __future__ import annotations

import random
import time
from typing import Any

import psycopg
from sqlalchemy import Connection, Engine, select
from sqlalchemy.exc import DataError

from tests.collector.extract.extract_corpus import (
    CAPTURE_OPTIONS,
    capture_files,
    read_request,
    request,
)
from tooltrail.collector import conversation_view
from tooltrail.collector.capture.explicit import explicit_batch
from tooltrail.collector.extract import extract
from tooltrail.collector.extract.dedup import collapse, walk_duplicates
from tooltrail.collector.ingest import extract_safely
from tooltrail.collector.model import Batch
from tooltrail.collector.production import signals
from tooltrail.collector.store import leases
from tooltrail.collector.store.db import make_engine, migrate
from tooltrail.collector.store.persist import write_batches
from tooltrail.collector.store.tables import conversations, signal_buckets, signal_turns, tool_calls
from tooltrail.matcher import Trajectory

RANDOM_REQUESTS = 240
SEED = 19


def load(engine: Engine) -> None:
    """Every capture under each extraction option, and the random corpus, each request in a
    transaction of its own (the calls of one turn arrive apart)."""
    batches = [extract(read_request(path), options)
               for path in capture_files() for _, options in CAPTURE_OPTIONS]
    for i in range(RANDOM_REQUESTS):
        req, options = request(random.Random(f"{SEED}/{i}"))
        batches.append(extract_safely(req, options))  # as ingest does
    refused = 0
    for batch in batches:
        try:
            with engine.begin() as conn:
                write_batches(conn, [batch], time.time())
        # PostgreSQL refuses NUL in JSON text (COPY: psycopg's own error), which the corpus draws
        except (DataError, psycopg.errors.DataError):
            refused += 1
    assert refused <= len(batches) // 10
    with engine.begin() as conn:
        write_batches(conn, explicit_captures(conn), time.time(),
                      count_shown=conversation_view.counts)


def explicit_captures(conn: Connection) -> list[Batch]:
    """Explicit calls for every 3rd stored conversation with calls, at a position that has a
    stored turn or not: one sharing a traced call's id, one its name and arguments, one
    matching nothing (`collector.capture.merge`: by id, by signature, appended)."""
    rng = random.Random(SEED)
    c, k = conversations.c, tool_calls.c
    traced: dict[tuple[str, str], list[tuple[str, str | None, Any]]] = {}
    for key, project, name, call_id, arguments in conn.execute(
            select(c.key, c.project, k.name, k.call_id, k.arguments)
            .join(tool_calls, k.conversation_id == c.id)
            .where(k.executed, k.name != "").order_by(c.id, k.id)):
        traced.setdefault((key, project), []).append((name, call_id, arguments))
    out = []
    for (key, project), calls in sorted(traced.items())[::3]:
        (n1, id1, _), (n2, _, a2) = rng.choice(calls), rng.choice(calls)
        body = [{"name": n1, "id": id1, "result": "explicit"},
                {"name": n2, "arguments": a2 if isinstance(a2, dict) else {}, "error": "boom"},
                {"name": "explicit_only", "arguments": {"n": rng.randrange(3)}}]
        out.append(explicit_batch(key, rng.randrange(4), {"calls": body}, 1, project=project))
    assert len(out) > 20
    return out


def shape(paths: dict[int, Trajectory]) -> dict[int, list[list[tuple[Any, ...]]]]:
    """Everything of each call but its result's value: whether it has one."""
    return {cid: [[(c.name, c.call_id, c.step, c.error, c.arguments, c.result is None)
                   for c in turn] for turn in path.turns] for cid, path in paths.items()}


def tables(conn: Connection) -> tuple[list[Any], list[Any]]:
    return ([tuple(r) for r in conn.execute(select(signal_turns).order_by(
                signal_turns.c.turn_id))],
            [tuple(r) for r in conn.execute(select(signal_buckets).order_by(
                *signal_buckets.primary_key.columns))])


def test_light_signals_equal_the_full_trajectories(database_url: str) -> None:
    from tooltrail.collector import scorer

    migrate(database_url)
    engine = make_engine(database_url)
    load(engine)
    with engine.connect() as conn:
        ids = sorted(conn.execute(select(conversations.c.id)).scalars())
        full = scorer.trajectories(conn, ids)
        light = scorer.trajectories(conn, ids, results=False)
        facts = leases.conversation_facts(conn, ids)
    assert len(ids) > 100
    assert sum(len(t) for p in full.values() for t in p.turns) > 300  # calls were compared
    assert any(c.result is not None for p in full.values() for t in p.turns for c in t)
    assert any(c.result is None for p in full.values() for t in p.turns for c in t)
    assert shape(light) == shape(full)
    with engine.connect() as conn:
        order, _ = leases.ordered_turns(conn, ids)
        unread_calls = leases.trajectory_calls(conn, ids, results=False, arguments=False)
    seen, unread = scorer.outcomes(order, unread_calls)
    # both ways were taken: conversations whose pairing never looked at an argument, and
    # conversations whose reconciliation asked for them (and is left to the second read)
    assert len(seen) > 50 and len(unread) > 10
    assert sorted([*seen, *unread]) == ids
    assert seen == {cid: [[(c.name, c.error) for c in turn] for turn in full[cid].turns]
                    for cid in seen}
    with engine.connect() as conn:
        stored = leases.trajectory_calls(conn, ids)
    apart = 0
    for calls in stored.values():  # collapse's shortcut folds what walking every call folds
        executions = sorted((c for c in calls if c.executed),
                            key=lambda c: (c.start_ns, -c.end_ns, c.span_id))
        walked = walk_duplicates(executions)
        assert collapse(executions) == walked
        apart += len(walked.calls) == len(executions) > 1 and len(
            {c.call_id for c in executions}) == len(executions)
    assert apart > 20

    outcomes = []
    for paths in (full, None, {cid: full[cid] for cid in ids[::2]}):  # given, read, a mix
        with engine.connect() as conn:
            tx = conn.begin()
            signals.record(conn, facts, paths)
            outcomes.append(tables(conn))
            tx.rollback()
    kept, sums = outcomes[0]
    assert kept and sums
    assert any(row[-2] for row in kept)  # some turns with failed or unexecuted calls
    assert outcomes[1] == outcomes[0]
    assert outcomes[2] == outcomes[0]
    engine.dispose()
