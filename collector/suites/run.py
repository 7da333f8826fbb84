"""`tooltrail check` without a server: the service's own store, writer, worker and queries on a
temporary SQLite database.

Nothing here scores or stores by itself: the suite's expectations are registered with
`queries.add_expectation_version` (as `POST /api/v1/expectations` does), the inputs' batches go
through the `Writer` (group commit, as ingest does), the `Worker` scores every settled
conversation (settle time 0), and results and conversations are read with `store.queries` and
shaped by `api.convert`, exactly as the REST API answers them.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from collector.api import convert
from collector.metrics import Metrics
from collector.store import queries, scoring
from collector.store.db import make_engine, migrate
from collector.store.rows import prepare
from collector.store.writer import Writer
from collector.suites.inputs import Read
from collector.suites.report import Check, Report
from collector.suites.suite import Suite
from collector.worker import Worker

WRITES_IN_FLIGHT = 512  # batches handed to the writer at once (it groups them per commit)
ALL = 1 << 62  # "no limit" for the list queries


@contextlib.contextmanager
def temporary_store() -> Iterator[Engine]:
    """A migrated SQLite store in a temporary directory, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="tooltrail-check-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'check.db'}"
        migrate(url)
        engine = make_engine(url)
        try:
            yield engine
        finally:
            engine.dispose()


def register(engine: Engine, suite: Suite) -> None:
    """Store the suite's expectations (before any conversation: their jobs cover nothing,
    the worker's settle pass scores everything)."""
    with engine.begin() as conn:
        for entry in suite.entries:
            queries.add_expectation_version(conn, entry.id, entry.body, must_exist=False)


async def _write_all(engine: Engine, reads: Sequence[Read]) -> None:
    async with Writer(engine, Metrics(), max_queue_bytes=1 << 62) as writer:
        pending: set[asyncio.Task[None]] = set()
        for read in reads:
            for batch in read.batches:
                if batch.empty:
                    continue
                if len(pending) >= WRITES_IN_FLIGHT:
                    done, pending = await asyncio.wait(pending,
                                                       return_when=asyncio.FIRST_COMPLETED)
                    for task in done:
                        task.result()
                pending.add(asyncio.create_task(writer.write(prepare(batch), [])))
        for task in pending:
            await task


def write(engine: Engine, reads: Sequence[Read]) -> None:
    """Write every batch read through the writer; returns once all are committed."""
    asyncio.run(_write_all(engine, reads))


def score_all(engine: Engine) -> None:
    """Worker rounds until there is nothing left to score."""
    worker = Worker(engine, Metrics(), settle_seconds=0.0, poll_seconds=1.0, batch=500,
                    lease_seconds=3600.0)
    while worker.round():
        pass


def collect(engine: Engine, suite: Suite, reads: Sequence[Read], *,
            with_conversations: bool) -> Report:
    """The report: per selected (expectation, conversation) its current results, read back."""
    origin: dict[str, str] = {}
    for read in reads:
        for batch in read.batches:
            for trace in batch.traces:
                origin.setdefault(trace.conversation_key, read.source)
    with engine.connect() as conn:
        rows = queries.list_conversations(conn, limit=ALL, before_id=None)
        rows.sort(key=lambda r: r["key"])
        facts = {f.key: f for f in scoring.conversation_facts(conn, [r["id"] for r in rows])}
        results: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for row in queries.list_results(conn, limit=ALL, before_id=None, expectation=None,
                                        conversation_id=None, passed=None, since=None,
                                        until=None):
            out = convert.result(row, row["conversation_key"]).model_dump(mode="json")
            results.setdefault((row["expectation"], row["conversation_key"]), []).append(out)
        conversations = {
            r["key"]: convert.conversation(r, queries.conversation_turns(conn, r["id"]))
            .model_dump(mode="json")
            for r in rows
        } if with_conversations else {}
    checks: list[Check] = []
    selected: set[str] = set()
    for entry in suite.entries:
        keys = [r["key"] for r in rows if scoring.applies(entry.expectation, facts[r["key"]])]
        selected.update(keys)
        if not keys:
            checks.append(Check(entry.id, None, "skipped" if entry.optional else "fail",
                                "no conversation matched", None))
        for key in keys:
            found = results.get((entry.id, key))
            if not found:  # the worker could not score it (logged): never a silent pass
                checks.append(Check(entry.id, key, "fail", "the conversation was not scored",
                                    None))
            for result in sorted(found or [], key=_scope_order):
                checks.append(Check(entry.id, key, "pass" if result["passed"] else "fail",
                                    result["reason"], result))
    return Report(
        suite=suite,
        reads=list(reads),
        checks=checks,
        conversations=conversations,
        conversation_keys=[r["key"] for r in rows],
        unselected=[r["key"] for r in rows if r["key"] not in selected],
        origin=origin,
    )


def _scope_order(result: dict[str, Any]) -> tuple[int, int]:
    scope = result.get("scope") or {}
    return (0 if scope.get("kind") != "turn" else 1, int(scope.get("turn") or 0))


def check_offline(suite: Suite, reads: Sequence[Read], *, with_conversations: bool = True,
                  progress: Callable[[str], None] | None = None) -> Report:
    """Score the conversations read against the suite on a temporary store."""
    with temporary_store() as engine:
        register(engine, suite)
        if progress:
            progress("writing conversations")
        write(engine, reads)
        if progress:
            progress("scoring")
        score_all(engine)
        return collect(engine, suite, reads, with_conversations=with_conversations)
