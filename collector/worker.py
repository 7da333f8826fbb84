"""The scoring worker: scores settled conversations and works through rescoring jobs."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from tooltrail.collector import reextract, scorer
from tooltrail.collector.governance import retention
from tooltrail.collector.metrics import Metrics
from tooltrail.collector.production import evaluation, signals
from tooltrail.collector.production.evaluation import parse_headers
from tooltrail.collector.store import jobs, leases, maintenance, production
from tooltrail.collector.tasks import cancel
from tooltrail.matcher import Selector, Trajectory
from tooltrail.matcher.selector import parse_selector

if TYPE_CHECKING:
    from tooltrail.collector.config import Settings
    from tooltrail.collector.production.export import EvaluationExporter

log = logging.getLogger(__name__)

STATISTICS_INTERVAL = 10.0  # seconds between checks of the tables' planner statistics
MAX_BACKOFF = 10.0  # longest pause between rounds while they fail
RETENTION_INTERVAL = 10.0  # seconds between deletions of expired conversations


@dataclass(frozen=True)
class WorkerConfig:
    """What a worker needs, as plain values (a spawned worker process gets it pickled and does
    not import the settings model)."""

    database_url: str
    settle_seconds: float
    poll_seconds: float
    batch: int
    lease_seconds: float
    log_level: str = "info"
    log_format: str = "text"
    retention_seconds: float | None = None  # None: conversations are kept forever
    signals: bool = True
    export_endpoint: str | None = None
    export_headers: tuple[tuple[str, str], ...] = ()
    export_queue: int = 2048

    @classmethod
    def from_settings(cls, settings: Settings) -> WorkerConfig:
        return cls(
            database_url=settings.database_url,
            settle_seconds=settings.settle_seconds,
            poll_seconds=settings.worker_poll_seconds,
            batch=settings.worker_batch,
            lease_seconds=settings.lease_seconds,
            log_level=settings.log_level,
            log_format=settings.log_format,
            retention_seconds=retention_of(settings),
            signals=settings.signals,
            export_endpoint=settings.export_otlp_endpoint,
            export_headers=tuple(parse_headers(settings.export_otlp_headers).items()),
            export_queue=settings.export_queue_size,
        )


class Worker:
    """Claims work with leases, so any number of workers can share one PostgreSQL store."""

    def __init__(
        self,
        engine: Engine,
        metrics: Metrics,
        *,
        settle_seconds: float,
        poll_seconds: float,
        batch: int,
        lease_seconds: float,
        retention_seconds: float | None = None,
        signals: bool = True,
        exporter: EvaluationExporter | None = None,
    ) -> None:
        self.engine = engine
        self.metrics = metrics
        self.settle = settle_seconds
        self.poll = poll_seconds
        self.batch = batch
        self.lease = lease_seconds
        self.signals = signals
        self.exporter = exporter
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._next_statistics = 0.0
        self._backoff = 0.0  # > 0 while rounds fail: the longest pause before the next one
        self._trouble: str | None = None  # "schema" or "unreachable" once that has been logged
        # where a settled conversation's time-to-score goes (a worker process relays it)
        self.on_scored: Callable[[float], None] = metrics.score_delay.observe
        self.retention_seconds = retention_seconds
        self._next_retention = 0.0

    @classmethod
    def from_config(cls, engine: Engine, metrics: Metrics, config: WorkerConfig) -> Worker:
        """A worker on `engine` (which should be on `config.database_url`)."""
        return cls(
            engine,
            metrics,
            settle_seconds=config.settle_seconds,
            poll_seconds=config.poll_seconds,
            batch=config.batch,
            lease_seconds=config.lease_seconds,
            retention_seconds=config.retention_seconds,
            signals=config.signals,
            exporter=_exporter(config, metrics),
        )

    async def __aenter__(self) -> Worker:
        self._task = asyncio.create_task(self.run(), name="tooltrail-worker")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop after the current round. Safe if never started."""
        await cancel(self._task)
        self._task = None
        if self.exporter is not None:
            await asyncio.to_thread(self.exporter.shutdown)

    def wake(self) -> None:
        """Start the next round now (e.g. an expectation was created)."""
        self._wake.set()

    async def run(self) -> None:
        """Work until cancelled; sleep `pause` when there is nothing to do."""
        while True:
            busy = await asyncio.to_thread(self.safe_round)
            if not busy:
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self.pause)

    @property
    def pause(self) -> float:
        """How long to wait before the next round when idle: `poll`, or while rounds fail, a
        backoff that doubles up to MAX_BACKOFF, with jitter so workers that lost the database
        together do not all come back in the same instant."""
        if not self._backoff:
            return self.poll
        return random.uniform(self._backoff / 2, self._backoff)

    def safe_round(self) -> int:
        """`round`, with its failure counted and logged (the work is retried next round, after a
        backoff). A database that is unreachable or whose schema is not at head is said once,
        with what to do, not per round; other failures are logged each time."""
        try:
            busy = self.round()
        except Exception as exc:  # loop boundary: log, count, back off, keep going
            self.metrics.loop_errors.labels("worker").inc()
            state = self._database_state()
            if state == "unreachable" and self._trouble != "unreachable":
                self._trouble = "unreachable"
                log.error("the database is unreachable (%s): retrying with backoff",
                          " ".join(str(exc).split())[:300])
            elif state is None:
                log.exception("worker round failed")
            if state != "arrived":
                self._backoff = min(max(2 * self._backoff, self.poll), MAX_BACKOFF)
            return 0
        self._recovered()
        return busy

    def _recovered(self) -> None:
        if self._trouble == "schema":
            log.info("the database schema is at head now: scoring")
        elif self._trouble == "unreachable":
            log.info("the database is reachable again: scoring")
        self._trouble = None
        self._backoff = 0.0

    def _database_state(self) -> str | None:
        """After a failed round, what the database says: "unreachable" (it cannot be asked its
        schema either), "schema" (not at head; told the first time), "arrived" (reached head
        only since the round failed: not an error of its own), or None (the round's own error
        is the news). Alembic is imported only here, on failure."""
        from tooltrail.collector.store.db import schema_revisions

        try:
            current, head = schema_revisions(self.engine)
        except Exception:  # the database cannot be asked anything
            return "unreachable"
        if current == head:  # migrated between the round and this look: the round ran before
            waiting = self._trouble == "schema"
            self._recovered()
            return "arrived" if waiting else None
        if self._trouble != "schema":
            self._trouble = "schema"
            found = f"is at revision {current}" if current else "has no tooltrail schema yet"
            log.error(
                "the database %s (this version needs %s): run `tooltrail migrate` with the same "
                "database URL; retrying until it is done", found, head,
            )
        return "schema"

    def round(self) -> int:
        """One round: score settled conversations, then one chunk of a job. Returns work done."""
        self.refresh_statistics()
        self.expire_conversations()
        return self.score_settled() + self.work_chunk()

    def refresh_statistics(self) -> None:
        """Every STATISTICS_INTERVAL: analyze tables whose planner statistics are missing or
        stale (`collector.store.maintenance`). A failure is logged; scoring goes on."""
        now = time.monotonic()
        if now < self._next_statistics:
            return
        self._next_statistics = now + STATISTICS_INTERVAL
        try:
            with self.engine.begin() as conn:
                maintenance.refresh_statistics(conn)
        except SQLAlchemyError:  # loop boundary: statistics are an optimisation
            self.metrics.loop_errors.labels("statistics").inc()
            log.warning("refreshing planner statistics failed", exc_info=True)

    def expire_conversations(self) -> None:
        """Every RETENTION_INTERVAL, with a retention: delete conversations last seen before
        the cut-off, in bounded batches (`collector.governance.retention`). A failure is
        logged; scoring goes on and the next interval retries."""
        now = time.monotonic()
        if self.retention_seconds is None or now < self._next_retention:
            return
        self._next_retention = now + min(RETENTION_INTERVAL, self.retention_seconds / 4)
        try:
            deleted = retention.expire(self.engine, self.retention_seconds)
        except SQLAlchemyError:  # loop boundary: the next interval retries
            self.metrics.loop_errors.labels("retention").inc()
            log.warning("deleting expired conversations failed", exc_info=True)
            return
        if deleted:
            self.metrics.deleted_conversations.labels("retention").inc(deleted)

    def score_settled(self) -> int:
        """Score the conversations that changed and have been quiet for the settle time.

        Two transactions. The first reads and scores them, and composes their signals, with
        no row lock: their leases keep other workers and rescoring chunks off them meanwhile,
        and their facts are read first, so what is scored is at least as new as the
        change_seq marked. The second, short, locks those whose lease still holds, writes
        their results and signals and releases them. Holding the rows' locks through the
        reading would make the writer wait for it, on every conversation being scored, for as
        long as their histories take to read."""
        with self.engine.begin() as conn:
            claimed = leases.claim_dirty(
                conn,
                now=time.time(),
                settle=self.settle,
                lease=self.lease,
                limit=self.batch,
                owner=self.owner,
            )
        if not claimed:
            return 0
        try:
            with self.engine.begin() as conn:
                active = scorer.active_expectations(conn)
                facts = leases.conversation_facts(conn, claimed)
                done, scored, _, paths = self._plan(conn, facts, active)
                kept = signals.contributions(conn, facts, paths) if self.signals else []
            with self.engine.begin() as conn:
                owned = leases.still_owned(conn, claimed, self.owner, now=time.time())
                facts = [f for f in facts if f.id in owned]
                self._store(conn, [s for s in scored if s.conversation.id in owned], done)
                if self.signals:
                    production.replace_turns(
                        conn, sorted(owned), [k for k in kept if k.conversation_id in owned])
                leases.release(conn, self.owner, owned, facts)
            now = time.time()
            for f in facts:  # committed: their time from last span to results
                self.on_scored(now - f.last_seen)
        except Exception:  # loop boundary: free the leases so the work is retried
            self.metrics.loop_errors.labels("score").inc()
            log.exception("scoring %d conversations failed", len(claimed))
            with self.engine.begin() as conn:
                leases.release(conn, self.owner, claimed)
            raise
        return len(claimed)

    def work_chunk(self) -> int:
        """Process one chunk of a rescoring job."""
        now = time.time()
        with self.engine.begin() as conn:
            chunk = jobs.claim_chunk(conn, now=now, lease=self.lease, owner=self.owner)
        if chunk is None:
            return 0
        if chunk.spec.get("kind") == reextract.KIND:  # extraction again, then settle-scoring
            return reextract.work_chunk(self.engine, chunk, self.owner, now)
        with self.engine.begin() as conn:  # one transaction: the chunk's rows stay locked
            if not jobs.job_is_live(conn, chunk.job_id):
                return 1
            ids = jobs.chunk_conversations(conn, chunk)
            facts = leases.lock_free(conn, ids, now=now)
            busy = len(ids) - len(facts)
            current = {e.slug: e for e in scorer.active_expectations(conn)}
            wanted = [
                current[slug]
                for slug, version in chunk.spec["expectations"]
                if slug in current and current[slug].version == version
            ]
            selector = chunk.spec.get("selector")
            if selector is not None:
                job_selector = parse_selector(selector)
                facts = [f for f in facts if _selected(job_selector, f)]
            failed, paths = self._score(conn, facts, wanted)
            # a job over every active expectation did all that settle-scoring would do
            if {e.slug for e in wanted} == set(current):
                if self.signals:  # settle-scoring will not claim them: record their signals
                    signals.record(conn, facts, paths)
                leases.mark_scored(conn, facts)
            if busy:
                jobs.retry_chunk_soon(conn, chunk, self.owner, delay=0.5)
            else:
                jobs.finish_chunk(conn, chunk, self.owner, done=len(ids) - failed, failed=failed)
        return max(len(ids), 1)

    def _score(
        self,
        conn: Connection,
        facts: list[leases.ConversationFacts],
        wanted: list[scorer.ActiveExpectation],
    ) -> tuple[int, dict[int, Trajectory]]:
        """Score each conversation against the wanted expectations whose selector picks it
        and store the results (`_plan`, `_store`, in this transaction). Returns how many
        conversations could not be scored and the trajectories read to score them."""
        done, scored, failed, trajectories = self._plan(conn, facts, wanted)
        self._store(conn, scored, done)
        return failed, trajectories

    def _plan(
        self,
        conn: Connection,
        facts: list[leases.ConversationFacts],
        wanted: list[scorer.ActiveExpectation],
    ) -> tuple[dict[leases.CurrentKey, list[int]], list[scorer.Scored], int,
               dict[int, Trajectory]]:
        """Score, without writing, each conversation against the wanted expectations whose
        selector picks it, skipping (trajectory, version) pairs that already have a current
        result. Returns the current results read, what was scored, how many conversations
        could not be scored (counted and logged, never retried forever), and the
        trajectories read to score (none when nothing was to score)."""
        done = leases.current_results(conn, [f.id for f in facts])
        todo = [
            (f, e)
            for f in facts
            for e in wanted
            if e.project == f.project  # an expectation scores its own project's only
            and (f.id, e.slug, e.version, f.change_seq) not in done
            and scorer.applies(e.expectation, f)
        ]
        if not todo:
            return done, [], 0, {}
        trajectories = scorer.trajectories(conn, sorted({f.id for f, _ in todo}))
        failed: set[int] = set()

        def fail(f: leases.ConversationFacts, e: scorer.ActiveExpectation) -> None:
            self.metrics.loop_errors.labels("score").inc()
            log.exception("scoring conversation %r against %s failed", f.key, e.slug)
            failed.add(f.id)

        scored = scorer.score_pairs(todo, trajectories, fail)
        return done, scored, len(failed), trajectories

    def _store(self, conn: Connection, scored: list[scorer.Scored],
               done: dict[leases.CurrentKey, list[int]]) -> None:
        """Write what `_plan` scored (`done`: the current results it read), count it, and
        export its verdicts when an exporter is configured."""
        for s in scored:
            for result in s.results:
                self.metrics.scored.labels(str(result.passed).lower()).inc()
        scorer.store(conn, scored, done)
        if self.exporter is not None and scored:
            self.exporter.emit(evaluation.verdicts(conn, scored))


def retention_of(settings: Settings) -> float | None:
    """The retention setting in seconds, or None (keep forever)."""
    if settings.retention is None:
        return None
    return retention.parse_duration(settings.retention)


def _exporter(config: WorkerConfig, metrics: Metrics) -> EvaluationExporter | None:
    """The verdict exporter, when an endpoint is configured (the OpenTelemetry SDK's exporter
    is imported only then)."""
    if not config.export_endpoint:
        return None
    from tooltrail.collector.production.export import EvaluationExporter

    return EvaluationExporter(config.export_endpoint, dict(config.export_headers),
                              metrics.registry, max_queue=config.export_queue)


def _selected(selector: Selector, facts: leases.ConversationFacts) -> bool:
    return selector.matches(
        conversation=facts.key,
        service=facts.service,
        agents=facts.agents,
        attributes=facts.attributes,
    )
