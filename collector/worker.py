"""The scoring worker: scores settled conversations and works through rescoring jobs."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from types import TracebackType

from sqlalchemy import Connection, Engine

from collector.metrics import Metrics
from collector.store import scoring
from matcher import score

log = logging.getLogger(__name__)


class Worker:
    """Claims work with leases, so any number of workers can share one PostgreSQL store."""

    def __init__(
        self, engine: Engine, metrics: Metrics, *, settle_seconds: float, poll_seconds: float,
        batch: int, lease_seconds: float,
    ) -> None:
        self.engine = engine
        self.metrics = metrics
        self.settle = settle_seconds
        self.poll = poll_seconds
        self.batch = batch
        self.lease = lease_seconds
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    async def __aenter__(self) -> Worker:
        self._task = asyncio.create_task(self.run(), name="tooltrail-worker")
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop after the current round. Safe if never started."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def wake(self) -> None:
        """Start the next round now (e.g. an expectation was created)."""
        self._wake.set()

    async def run(self) -> None:
        """Work until cancelled; sleep `poll` seconds when there is nothing to do."""
        while True:
            try:
                busy = await asyncio.to_thread(self.round)
            except Exception:  # loop boundary: log, count, keep going
                self.metrics.loop_errors.labels("worker").inc()
                log.exception("worker round failed")
                busy = 0
            if not busy:
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self.poll)

    def round(self) -> int:
        """One round: score settled conversations, then one chunk of a job. Returns work done."""
        return self.score_settled() + self.work_job()

    def score_settled(self) -> int:
        """Score the conversations that changed and have been quiet for the settle time."""
        now = time.time()
        with self.engine.begin() as conn:
            claimed = scoring.claim_dirty(
                conn, now=now, settle=self.settle, lease=self.lease, limit=self.batch,
                owner=self.owner,
            )
        if not claimed:
            return 0
        with self.engine.connect() as conn:
            active = scoring.active_expectations(conn)
        seqs = dict(claimed)
        for conv_id in seqs:
            try:
                self._score_conversation(conv_id, active)
            except Exception:  # one bad conversation must not stall the rest
                self.metrics.loop_errors.labels("score").inc()
                log.exception("scoring conversation %d failed", conv_id)
                with self.engine.begin() as conn:
                    scoring.release(conn, conv_id, self.owner, seqs[conv_id])
        return len(claimed)

    def _score_conversation(self, conv_id: int, active: list[scoring.ActiveExpectation]) -> None:
        with self.engine.begin() as conn:
            found = scoring.conversation_facts(conn, [conv_id])
            if not found:
                return  # merged into its real conversation meanwhile
            facts = found[0]
            wanted = [e for e in active if scoring.applies(e.expectation, facts)]
            self._score(conn, facts, wanted)
            if not scoring.release(conn, conv_id, self.owner, facts.change_seq):
                conn.rollback()  # our lease expired and another worker owns it now

    def work_job(self) -> int:
        """Process one chunk of one rescoring job."""
        now = time.time()
        with self.engine.begin() as conn:
            job = scoring.claim_job(conn, now=now, lease=self.lease)
        if job is None:
            return 0
        with self.engine.begin() as conn:
            exp = scoring.expectation_version(conn, job["expectation"], job["expectation_version"])
            ids = scoring.job_chunk(conn, job["cursor"], self.batch) if exp else []
            done = 0
            for facts in scoring.conversation_facts(conn, ids):
                if exp is not None and scoring.applies(exp.expectation, facts):
                    self._score(conn, facts, [exp])
                done += 1
            scoring.advance_job(
                conn, job["id"], cursor=ids[-1] if ids else job["cursor"], done=done, failed=0,
                finished=not ids, now=time.time(),
            )
        return max(done, 1)

    def _score(
        self, conn: Connection, facts: scoring.ConversationFacts,
        wanted: list[scoring.ActiveExpectation],
    ) -> None:
        todo = [e for e in wanted if not scoring.already_scored(conn, facts, e)]
        if not todo:
            return
        trajectory = scoring.trajectory(conn, facts.id)
        now = time.time()
        for exp in todo:
            scored = score(exp.expectation, trajectory)
            scoring.store_results(conn, facts, exp, scored, now)
            for result in scored:
                self.metrics.scored.labels(str(result.passed).lower()).inc()
