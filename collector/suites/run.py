"""`tooltrail check` without a server: the service's own extraction, rows and scoring, on an
in-memory store.

Nothing here extracts, reconciles or scores by itself: the inputs' batches are prepared as
ingest prepares them (`rows.prepare`) and kept by `collector.memory_store.MemoryStore` as the
writer would store them; each conversation's trajectory is read from it through the
interface the worker reads through and scored by `collector.scorer`, the worker's own
composition (`scorer.trajectories`, `applies`, `score_pairs`); each result takes the row shape
the worker stores (`scorer.result_row`) and the REST shape `api.convert` gives it. Results are
not kept: they are spooled to a file per expectation as they are made and read back once per
rendering, so memory holds the calls and one chunk of conversations' results, never all
results. `temporary_store` and `write` put inputs in a real (temporary SQLite) store, for
`tooltrail golden` and for comparing with the worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from tooltrail.collector import conversation_view, heap, scorer
from tooltrail.collector.api import convert
from tooltrail.collector.extract import ExtractOptions
from tooltrail.collector.memory_store import MemoryStore
from tooltrail.collector.metrics import Metrics
from tooltrail.collector.projects import DEFAULT_PROJECT
from tooltrail.collector.store import leases
from tooltrail.collector.store.db import make_engine, migrate
from tooltrail.collector.store.rows import prepare
from tooltrail.collector.store.writer import Writer
from tooltrail.collector.suites.inputs import Read, read_input
from tooltrail.collector.suites.report import Check, Report, Spool, dump, load
from tooltrail.collector.suites.suite import Suite
from tooltrail.matcher import Result

log = logging.getLogger(__name__)

SPANS_IN_FLIGHT = 50_000  # read ahead of the writer's commits (it groups batches per commit)
SCORE_CHUNK = 500  # conversations whose trajectories are read and scored together
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


def _by_scope(check: Check) -> tuple[bool, int]:
    return check.turn_index is not None, check.turn_index or 0


def remember(store: MemoryStore, sources: Sequence[str], options: ExtractOptions,
             forced: str | None = None,
             progress: Callable[[str], None] | None = None) -> list[Read]:
    """Read every input and keep its batches in `store` as they are read; returns what each
    input gave."""
    reads: list[Read] = []
    for i, source in enumerate(sources, 1):
        read = Read(source, forced)
        reads.append(read)
        for batch in read_input(source, options, forced, read):
            if not batch.empty:
                store.add(prepare(batch), time.time())
        if progress:
            progress(f"read {i}/{len(sources)} inputs")
    return reads


def score(store: MemoryStore, suite: Suite, spool: Spool, *, with_results: bool
          ) -> tuple[list[str], list[str]]:
    """Score every conversation of `store` against the suite, a chunk of conversations'
    trajectories at a time, each result going to `spool` as it is made (per expectation, in
    conversation-key order); returns (every conversation key, the keys no expectation
    selects). An expectation that selects nothing gets its "no conversation matched"."""
    wanted = [scorer.ActiveExpectation(e.id, VERSION, e.expectation, DEFAULT_PROJECT)
              for e in suite.entries]
    optional = {e.id: e.optional for e in suite.entries}
    picked: set[str] = set()
    unselected: list[str] = []

    def failed(f: leases.ConversationFacts, e: scorer.ActiveExpectation) -> None:
        log.error("scoring conversation %r against %s failed: %s", f.key, e.slug,
                  sys.exc_info()[1])

    facts = store.facts()
    facts.sort(key=lambda f: f.key)
    for start in range(0, len(facts), SCORE_CHUNK):
        part = facts[start:start + SCORE_CHUNK]
        with heap.paused():  # the chunk's trajectories and results live to its end
            pairs = [(f, e) for f in part for e in wanted if scorer.applies(e.expectation, f)]
            paths = scorer.trajectories(store, sorted({f.id for f, _ in pairs}))
            now = time.time()
            found = {(s.expectation.slug, s.conversation.key):
                     [_check(s, result, now, with_results) for result in s.results]
                     for s in scorer.score_pairs(pairs, paths, failed)}
            chosen = {f.key for f, _ in pairs}
            unselected.extend(f.key for f in part if f.key not in chosen)
            for f, e in pairs:
                picked.add(e.slug)
                checks = found.get((e.slug, f.key))
                if not checks:  # the matcher raised (logged): never a silent pass
                    checks = [Check(e.slug, f.key, "fail", "the conversation was not scored",
                                    None)]
                for check in sorted(checks, key=_by_scope):
                    spool.add(check)
            del pairs, paths, found  # freed before collection resumes, which would walk them
    for e in wanted:
        if e.slug not in picked:
            spool.add(Check(e.slug, None, "skipped" if optional[e.slug] else "fail",
                            "no conversation matched", None))
    return [f.key for f in facts], unselected


class StoredConversations(Mapping[str, Any]):
    """The store's conversations as GET /api/v1/conversations/{key} returns them, each read
    from the store (and reconciled) once, when first asked for, then kept (`report.dump`) in a file
    beside the spool: a report renders each several times and never holds them all."""

    def __init__(self, store: MemoryStore, keys: Sequence[str], directory: Path) -> None:
        self.store = store
        self.keys_in_order = list(keys)
        self.known = set(keys)
        self.where: dict[str, tuple[int, int]] = {}  # key → (offset, length) in the file
        self.file = (directory / "conversations.spool").open("w+b")

    def __getitem__(self, key: str) -> Any:
        if key not in self.known:
            raise KeyError(key)
        if key in self.where:
            offset, length = self.where[key]
            self.file.seek(offset)
            return load(self.file.read(length))
        cid = self.store.conversation_id(key, DEFAULT_PROJECT)
        if cid is None:
            raise KeyError(key)
        turns = conversation_view.shown_turns(*self.store.conversation_rows(cid))
        value = convert.conversation(self.store.conversation_row(cid, turns),
                                     turns).model_dump(mode="json")
        data = dump(value)
        self.where[key] = (self.file.seek(0, io.SEEK_END), len(data))
        self.file.write(data)
        return value

    def __contains__(self, key: object) -> bool:
        return key in self.known

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys_in_order)

    def __len__(self) -> int:
        return len(self.keys_in_order)

    def close(self) -> None:
        self.file.close()


def collect(store: MemoryStore, suite: Suite, reads: Sequence[Read], directory: Path, *,
            with_conversations: bool, with_results: bool = True) -> Report:
    """The report: per selected (expectation, conversation) its results (whole REST result
    objects only `with_results`; the verdict and scores always), spooled to `directory`;
    the conversations are read from the store as the report is rendered."""
    origin: dict[str, str] = {}
    for read in reads:
        for key in read.conversations:
            origin.setdefault(key, read.source)
    with Spool(directory, [e.id for e in suite.entries]) as spool:
        keys, unselected = score(store, suite, spool, with_results=with_results)
    return Report(
        suite=suite,
        reads=list(reads),
        checks=spool,
        conversations=(StoredConversations(store, keys, directory) if with_conversations
                       else {}),
        conversation_keys=keys,
        unselected=unselected,
        origin=origin,
        tally=spool.tally,
    )


@contextlib.contextmanager
def check_offline(suite: Suite, sources: Sequence[str], options: ExtractOptions, *,
                  forced: str | None = None, with_conversations: bool = True,
                  with_results: bool = True,
                  progress: Callable[[str], None] | None = None) -> Iterator[Report]:
    """Score the inputs' conversations against the suite on an in-memory store; the report
    is valid inside the `with` (its checks and conversations are read back as rendered)."""
    store = MemoryStore()
    with (heap.few_full_collections(),
          tempfile.TemporaryDirectory(prefix="tooltrail-check-spool-") as directory):
        reads = remember(store, sources, options, forced, progress)
        if progress:
            progress("scoring")
        report = collect(store, suite, reads, Path(directory),
                         with_conversations=with_conversations, with_results=with_results)
        try:
            yield report
        finally:
            if isinstance(report.conversations, StoredConversations):
                report.conversations.close()
