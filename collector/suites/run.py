"""`tooltrail check` without a server: the service's own store, writer and scoring on a
temporary SQLite database.

Nothing here extracts, reconciles or scores by itself: the inputs' batches go through the
`Writer` (group commit, as ingest does) into the service's tables; each conversation's
trajectory is read back and scored by `collector.scorer`, the worker's own composition
(`scorer.trajectories`, `applies`, `score_pairs`); each result takes the row shape the worker
stores (`scorer.result_row`) and the REST shape `api.convert` gives it. Results are reported,
not stored: nothing reads them back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from sqlalchemy import Engine

from collector import conversation_view, scorer
from collector.api import convert
from collector.extract import ExtractOptions
from collector.metrics import Metrics
from collector.projects import DEFAULT_PROJECT
from collector.store import leases, queries
from collector.store.db import make_engine, migrate
from collector.store.rows import prepare
from collector.store.writer import Writer
from collector.suites.inputs import Read, read_input
from collector.suites.report import Check, Report
from collector.suites.suite import Suite
from matcher import Result

log = logging.getLogger(__name__)

SPANS_IN_FLIGHT = 50_000  # read ahead of the writer's commits (it groups batches per commit)
SCORE_CHUNK = 500  # conversations whose trajectories are read and scored together
ALL = 1 << 62  # "no limit" for the list queries
VERSION = 1  # every suite expectation is version 1 of itself


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


async def _write_all(engine: Engine, sources: Sequence[str], options: ExtractOptions,
                     forced: str | None, reads: list[Read],
                     progress: Callable[[str], None] | None) -> None:
    async with Writer(engine, Metrics(), max_queue_bytes=1 << 62,
                      count_shown=conversation_view.counts) as writer:
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


def _check(s: scorer.Scored, result: Result, now: float, with_results: bool) -> Check:
    """One result as a report line: the REST result object (`with_results`), or only the
    verdict, scores and turn."""
    exp, conv = s.expectation.slug, s.conversation.key
    status = "pass" if result.passed else "fail"
    if with_results:
        out = convert.result(scorer.result_row(s, result, now), conv).model_dump(mode="json")
        return Check(exp, conv, status, out["reason"], out)
    scope = result.scope
    return Check(exp, conv, status, result.reason or "", None,
                 scores=(result.precision, result.recall, result.f1,
                         result.argument_score or 0.0),
                 turn=scope.get("turn") if scope.get("kind") == "turn" else None)


def score(engine: Engine, suite: Suite, *, with_results: bool
          ) -> tuple[list[leases.ConversationFacts], dict[tuple[str, str], list[Check]]]:
    """Every stored conversation (by key) and, per selected (expectation, conversation), its
    results as report lines; a chunk of conversations' trajectories at a time."""
    wanted = [scorer.ActiveExpectation(e.id, VERSION, e.expectation, DEFAULT_PROJECT)
              for e in suite.entries]
    found: dict[tuple[str, str], list[Check]] = {}

    def failed(f: leases.ConversationFacts, e: scorer.ActiveExpectation) -> None:
        log.error("scoring conversation %r against %s failed: %s", f.key, e.slug,
                  sys.exc_info()[1])

    with engine.connect() as conn:
        facts = leases.facts_upto(conn, ALL) or []
        for start in range(0, len(facts), SCORE_CHUNK):
            part = facts[start:start + SCORE_CHUNK]
            pairs = [(f, e) for f in part for e in wanted if scorer.applies(e.expectation, f)]
            paths = scorer.trajectories(conn, sorted({f.id for f, _ in pairs}))
            now = time.time()
            for s in scorer.score_pairs(pairs, paths, failed):
                found[(s.expectation.slug, s.conversation.key)] = [
                    _check(s, result, now, with_results) for result in s.results]
    facts.sort(key=lambda f: f.key)
    return facts, found


def collect(engine: Engine, suite: Suite, reads: Sequence[Read], *,
            with_conversations: bool, with_results: bool = True) -> Report:
    """The report: per selected (expectation, conversation) its results (whole REST result
    objects only `with_results`; the verdict and scores always)."""
    origin: dict[str, str] = {}
    for read in reads:
        for key in read.conversations:
            origin.setdefault(key, read.source)
    facts, results = score(engine, suite, with_results=with_results)
    keys = [f.key for f in facts]
    conversations = {}
    if with_conversations:
        with engine.connect() as conn:
            rows = queries.list_conversations(conn, limit=ALL, before_id=None)
            conversations = {
                r["key"]: convert.conversation(
                    r, conversation_view.conversation_turns(conn, r["id"]))
                .model_dump(mode="json")
                for r in sorted(rows, key=lambda r: r["key"])
            }
    checks: list[Check] = []
    selected: set[str] = set()
    for entry in suite.entries:
        picked = [f.key for f in facts if scorer.applies(entry.expectation, f)]
        selected.update(picked)
        if not picked:
            checks.append(Check(entry.id, None, "skipped" if entry.optional else "fail",
                                "no conversation matched", None))
        for key in picked:
            found = results.pop((entry.id, key), None)
            if not found:  # the matcher raised (logged): never a silent pass
                checks.append(Check(entry.id, key, "fail", "the conversation was not scored",
                                    None))
            checks.extend(sorted(found or [], key=lambda c: (c.turn_index is not None,
                                                             c.turn_index or 0)))
    return Report(
        suite=suite,
        reads=list(reads),
        checks=checks,
        conversations=conversations,
        conversation_keys=keys,
        unselected=[k for k in keys if k not in selected],
        origin=origin,
    )


def check_offline(suite: Suite, sources: Sequence[str], options: ExtractOptions, *,
                  forced: str | None = None, with_conversations: bool = True,
                  with_results: bool = True,
                  progress: Callable[[str], None] | None = None) -> Report:
    """Score the inputs' conversations against the suite on a temporary store."""
    with temporary_store() as engine:
        reads = write(engine, sources, options, forced, progress)
        if progress:
            progress("scoring")
        return collect(engine, suite, reads, with_conversations=with_conversations,
                       with_results=with_results)
