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

from sqlalchemy import Engine

from collector.api import convert
from collector.extract import ExtractOptions
from collector.metrics import Metrics
from collector.store import queries, scoring
from collector.store.db import make_engine, migrate
from collector.store.rows import prepare
from collector.store.writer import Writer
from collector.suites.inputs import Read, read_input
from collector.suites.report import Check, Report
from collector.suites.suite import Suite
from collector.worker import Worker

SPANS_IN_FLIGHT = 50_000  # read ahead of the writer's commits (it groups batches per commit)
RESULTS_PAGE = 5_000
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


async def _write_all(engine: Engine, sources: Sequence[str], options: ExtractOptions,
                     forced: str | None, reads: list[Read],
                     progress: Callable[[str], None] | None) -> None:
    async with Writer(engine, Metrics(), max_queue_bytes=1 << 62) as writer:
        pending: set[asyncio.Task[None]] = set()
        in_flight = 0  # spans handed to the writer and not yet committed

        def committed(spans: int) -> Callable[[asyncio.Task[None]], None]:
            def done(_: asyncio.Task[None]) -> None:
                nonlocal in_flight
                in_flight -= spans
            return done

        for i, source in enumerate(sources, 1):
            read = Read(source, forced)
            reads.append(read)
            for batch in read_input(source, options, forced, read):
                if batch.empty:
                    continue
                while in_flight >= SPANS_IN_FLIGHT and pending:
                    finished, pending = await asyncio.wait(
                        pending, return_when=asyncio.FIRST_COMPLETED)
                    for task in finished:
                        task.result()
                task = asyncio.create_task(writer.write(prepare(batch), []))
                in_flight += batch.span_count
                task.add_done_callback(committed(batch.span_count))
                pending.add(task)
            if progress:
                progress(f"read {i}/{len(sources)} inputs")
        for task in pending:
            await task


def write(engine: Engine, sources: Sequence[str], options: ExtractOptions,
          forced: str | None = None,
          progress: Callable[[str], None] | None = None) -> list[Read]:
    """Read every input and write its batches through the writer as they are read (memory
    stays bounded by SPANS_IN_FLIGHT, not by the inputs); returns what each input gave."""
    reads: list[Read] = []
    asyncio.run(_write_all(engine, sources, options, forced, reads, progress))
    return reads


def score_all(engine: Engine) -> None:
    """Worker rounds until there is nothing left to score."""
    worker = Worker(engine, Metrics(), settle_seconds=0.0, poll_seconds=1.0, batch=500,
                    lease_seconds=3600.0)
    while worker.round():
        pass


def collect(engine: Engine, suite: Suite, reads: Sequence[Read], *,
            with_conversations: bool, with_results: bool = True) -> Report:
    """The report: per selected (expectation, conversation) its current results, read back
    (whole REST result objects only `with_results`; the verdict and scores always)."""
    origin: dict[str, str] = {}
    for read in reads:
        for key in read.conversations:
            origin.setdefault(key, read.source)
    results: dict[tuple[str, str], list[Check]] = {}
    with engine.connect() as conn:
        rows = queries.list_conversations(conn, limit=ALL, before_id=None)
        rows.sort(key=lambda r: r["key"])
        facts = {f.key: f for f in scoring.conversation_facts(conn, [r["id"] for r in rows])}
        key_of = {r["key"]: r["key"] for r in rows}  # one str per key, however many rows
        id_of = {e.id: e.id for e in suite.entries}
        before: int | None = None
        while True:
            page = queries.list_results(conn, limit=RESULTS_PAGE, before_id=before,
                                        expectation=None, conversation_id=None, passed=None,
                                        since=None, until=None)
            for row in page:
                exp, conv = id_of.get(row["expectation"]), key_of.get(row["conversation_key"])
                if exp is None or conv is None:
                    continue
                status = "pass" if row["passed"] else "fail"
                if with_results:
                    out = convert.result(row, conv).model_dump(mode="json")
                    check = Check(exp, conv, status, out["reason"], out)
                else:
                    scope = row["detail"].get("scope") or {}
                    check = Check(exp, conv, status, row["reason"] or "", None,
                                  scores=(row["precision"], row["recall"], row["f1"],
                                          row["detail"].get("argument_score") or 0.0),
                                  turn=scope.get("turn") if scope.get("kind") == "turn"
                                  else None)
                results.setdefault((exp, conv), []).append(check)
            if len(page) < RESULTS_PAGE:
                break
            before = page[-1]["id"]
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
            found = results.pop((entry.id, key), None)
            if not found:  # the worker could not score it (logged): never a silent pass
                checks.append(Check(entry.id, key, "fail", "the conversation was not scored",
                                    None))
            checks.extend(sorted(found or [], key=lambda c: (c.turn_index is not None,
                                                             c.turn_index or 0)))
    return Report(
        suite=suite,
        reads=list(reads),
        checks=checks,
        conversations=conversations,
        conversation_keys=[r["key"] for r in rows],
        unselected=[r["key"] for r in rows if r["key"] not in selected],
        origin=origin,
    )


def check_offline(suite: Suite, sources: Sequence[str], options: ExtractOptions, *,
                  forced: str | None = None, with_conversations: bool = True,
                  with_results: bool = True,
                  progress: Callable[[str], None] | None = None) -> Report:
    """Score the inputs' conversations against the suite on a temporary store."""
    with temporary_store() as engine:
        register(engine, suite)
        reads = write(engine, sources, options, forced, progress)
        if progress:
            progress("scoring")
        score_all(engine)
        return collect(engine, suite, reads, with_conversations=with_conversations,
                       with_results=with_results)
