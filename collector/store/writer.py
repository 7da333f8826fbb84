"""Group commit: many ingest requests → one transaction; each is acknowledged after its commit.

Admission is by bytes: a request is admitted (before its body is read) only while the bytes
of the requests admitted and not yet answered stay under `max_queue_bytes`, so memory stays
bounded whatever the offered load; otherwise the receivers answer a retryable "overloaded".
When the store fails in a way a retry can fix (connection lost, database down, locked), every
request of that group gets a retryable answer and new requests are refused for `retry_after`
seconds; the next admitted request probes the store again, so ingest recovers by itself. Any
other failure, whatever its exception type, is the data's: the group is retried request by
request, so only the request at fault gets its (permanent) error and the others commit.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError, SQLAlchemyError

from tooltrail.collector.errors import InvalidPayload, Overloaded, StoreUnavailable
from tooltrail.collector.metrics import Metrics
from tooltrail.collector.store.persist import (
    CountShown,
    PreparedBatch,
    prune_ingest_errors,
    record_ingest_errors,
    write_prepared,
)
from tooltrail.collector.tasks import cancel

log = logging.getLogger(__name__)
MAX_PENDING_ERROR_ROWS = 1000  # ingest-error rows waiting for a commit; older ones are dropped
PRUNE_EVERY = 500  # error rows written between two prunes of the ingest_errors table
# SQLSTATE classes and codes after which the same write can succeed later
RETRYABLE_SQLSTATE_CLASSES = ("08", "53", "57", "58", "40")
# 23503: the writer's only foreign key is a turn's conversation, which a concurrent deletion
# (collector.governance.retention) removed after the writer looked it up; the retry creates it.
RETRYABLE_SQLSTATES = ("55P03", "55006", "25006", "23503")
RETRYABLE_SQLITE = ("locked", "busy", "disk i/o", "unable to open", "database or disk is full",
                    "readonly")


class Ticket:
    """Bytes admitted for one request, returned to the budget when it is answered."""

    __slots__ = ("_released", "_writer", "size")

    def __init__(self, writer: Writer, size: int) -> None:
        self._writer = writer
        self.size = size
        self._released = False

    def resize(self, size: int) -> None:
        """Account for the request's real size once it is known (decompressed, decoded)."""
        if not self._released and size > self.size:
            self._writer._account(size - self.size)
            self.size = size

    def release(self) -> None:
        """Give the bytes back (idempotent)."""
        if not self._released:
            self._released = True
            self._writer._account(-self.size)


@dataclass(slots=True)
class _Item:
    batch: PreparedBatch
    errors: list[dict[str, Any]]
    done: asyncio.Future[None]
    enqueued: float = field(default_factory=time.perf_counter)


class Writer:
    """Writes batches in shared transactions; admission is bounded by bytes."""

    def __init__(
        self,
        engine: Engine,
        metrics: Metrics,
        *,
        max_batch: int = 256,
        max_queue_bytes: int = 64 * 1024 * 1024,
        max_group_spans: int = 50_000,
        errors_keep: int = 10_000,
        retry_after: float = 1.0,
        concurrency: int | None = None,
        count_shown: CountShown | None = None,
    ) -> None:
        self.engine = engine
        self.count_shown = count_shown  # persist.recount_merged: the composition root's
        self.metrics = metrics
        self.max_batch = max_batch
        self.max_queue_bytes = max_queue_bytes
        metrics.queue_capacity_bytes.set(max_queue_bytes)
        self.max_group_spans = max_group_spans
        self.errors_keep = errors_keep
        self.retry_after = retry_after
        # SQLite has one writer. On PostgreSQL, groups may overlap (write_prepared locks the
        # conversations in id order, so counts stay exact); under overload, overlapping groups
        # that share conversations queue on each other's locks, so one is the default.
        sqlite = engine.dialect.name == "sqlite"
        self.concurrency = 1 if sqlite else (concurrency or 1)
        self.admitted_bytes = 0
        self._down_until = 0.0
        self._down_reason = ""
        self._error_rows: collections.deque[dict[str, Any]] = collections.deque(
            maxlen=MAX_PENDING_ERROR_ROWS
        )
        self._errors_since_prune = PRUNE_EVERY  # prune once soon after start
        self._queue: asyncio.Queue[_Item | None] | None = None
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Writer:
        self._queue = asyncio.Queue()
        self._task = asyncio.create_task(self._run(), name="tooltrail-writer")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Drain what is queued, then stop. Safe if never started."""
        if self._task is None or self._queue is None:
            return
        if self._error_rows:
            self._queue.put_nowait(None)
        await self._queue.join()
        await cancel(self._task)
        self._task = None
        self._queue = None

    @property
    def running(self) -> bool:
        """True between start and stop."""
        return self._queue is not None

    def _account(self, delta: int) -> None:
        self.admitted_bytes += delta
        self.metrics.queue_bytes.set(self.admitted_bytes)

    def admit(self, size: int) -> Ticket:
        """Admit a request of about `size` bytes, or raise a retryable Overloaded."""
        if self._queue is None:
            raise Overloaded("the writer is not running", retry_after=self.retry_after)
        if self._down_until > time.monotonic():
            raise StoreUnavailable(self._down_reason, retry_after=self.retry_after)
        if self.admitted_bytes and self.admitted_bytes + size > self.max_queue_bytes:
            raise Overloaded(
                f"ingest queue is full ({self.admitted_bytes} bytes waiting); retry later",
                retry_after=self.retry_after,
            )
        self._account(size)
        return Ticket(self, size)

    async def write(self, batch: PreparedBatch, errors: list[dict[str, Any]]) -> None:
        """Queue a batch and return once it is committed; raises a retryable error otherwise."""
        if self._queue is None:
            raise Overloaded("the writer is not running", retry_after=self.retry_after)
        item = _Item(batch, errors, asyncio.get_running_loop().create_future())
        self._queue.put_nowait(item)
        await item.done

    def record(self, errors: list[dict[str, Any]]) -> None:
        """Keep ingest-error rows for the next commit (bounded; the oldest are dropped)."""
        if self._queue is None or not errors:
            return
        was_empty = not self._error_rows
        self._error_rows.extend(errors)
        if was_empty and self._queue.empty():
            self._queue.put_nowait(None)  # wake the loop: nothing else may come to carry them

    async def _run(self) -> None:
        assert self._queue is not None
        queue = self._queue
        slots = asyncio.Semaphore(self.concurrency)
        running: set[asyncio.Task[None]] = set()
        while True:
            await slots.acquire()  # a free transaction first: the group then takes all queued
            first = await queue.get()
            got = 1
            items = [first] if first is not None else []
            spans = first.batch.span_count if first is not None else 0
            while (len(items) < self.max_batch and spans < self.max_group_spans
                   and not queue.empty()):
                item = queue.get_nowait()
                got += 1
                if item is not None:
                    items.append(item)
                    spans += item.batch.span_count
            errors = list(self._error_rows)
            self._error_rows.clear()
            task = asyncio.create_task(self._group(items, errors, got, slots))
            running.add(task)
            task.add_done_callback(running.discard)

    async def _group(self, items: list[_Item], errors: list[dict[str, Any]], got: int,
                     slots: asyncio.Semaphore) -> None:
        assert self._queue is not None
        try:
            await self._commit(items, errors)
        except Exception:  # loop boundary: the writer must outlive any one group
            self.metrics.loop_errors.labels("writer").inc()
            log.exception("writer loop failed")
            _settle(items, StoreUnavailable("write failed unexpectedly; retry"))
        finally:
            slots.release()
            for _ in range(got):
                self._queue.task_done()

    async def _commit(self, items: list[_Item], errors: list[dict[str, Any]]) -> None:
        if not items and not errors:
            return
        started = time.perf_counter()
        try:
            await asyncio.to_thread(self._write, items, errors)
        except Exception as exc:  # any failure: classified, then isolated to the item at fault
            error = classify(exc)
            self.metrics.writer_failures.labels(
                "retryable" if isinstance(error, Overloaded) else "permanent").inc()
            if isinstance(error, Overloaded):
                self._mark_down(error, exc)
                _settle(items, error)
                return
            if len(items) + bool(errors) > 1:  # isolate the request at fault; others commit
                for item in items:
                    await self._commit([item], [])
                if errors:
                    await self._commit([], errors)
                return
            log.warning("the store refused a request: %s: %s", type(exc).__name__, exc)
            _settle(items, error)
            return
        if self._down_until:
            log.warning("the store is available again")
            self._down_until = 0.0
        now = time.perf_counter()
        m = self.metrics
        m.commit_seconds.observe(now - started)
        m.group_requests.observe(len(items))
        for item in items:
            m.ack_seconds.observe(now - item.enqueued)
        m.committed_spans.inc(sum(i.batch.span_count for i in items))
        _settle(items, None)

    def _mark_down(self, error: Exception, cause: Exception) -> None:
        if not self._down_until:
            log.error("the store is unavailable (%s); answering retryable errors", cause)
        self._down_reason = str(error)
        self._down_until = time.monotonic() + self.retry_after

    def _write(self, items: list[_Item], errors: list[dict[str, Any]]) -> None:
        now = time.time()
        errors = errors + [row for item in items for row in item.errors]
        with self.engine.begin() as conn:
            if items:
                write_prepared(conn, [i.batch for i in items], now, self.count_shown)
            if errors:
                record_ingest_errors(conn, errors)
                self._errors_since_prune += len(errors)
                if self._errors_since_prune >= PRUNE_EVERY:
                    prune_ingest_errors(conn, self.errors_keep)
                    self._errors_since_prune = 0


def classify(exc: Exception) -> Exception:
    """Retryable (StoreUnavailable) when the same write can succeed later: the connection was
    lost, the server is down or starting, a lock or serialization conflict; else permanent
    (InvalidPayload). A driver error raised outside SQLAlchemy (COPY runs on the raw psycopg
    cursor) is read by its SQLSTATE the same way; any other exception is about the data, since
    the same write would raise it again."""
    name = exc.__class__.__name__
    if isinstance(exc, DBAPIError):
        if exc.connection_invalidated or isinstance(exc, InterfaceError):
            return StoreUnavailable(f"the store is unavailable: {name}; retry")
        state = getattr(exc.orig, "sqlstate", None)
        if isinstance(state, str):
            return _by_sqlstate(state, name)
        if isinstance(exc, OperationalError):
            text = str(exc.orig).lower()
            if state is None and (not hasattr(exc.orig, "sqlite_errorcode")
                                  or any(t in text for t in RETRYABLE_SQLITE)):
                return StoreUnavailable(f"the store is unavailable: {name}; retry")
        return InvalidPayload(f"the store refused the data: {name}")
    if isinstance(exc, SQLAlchemyError):
        return InvalidPayload(f"the store refused the data: {name}")
    state = getattr(exc, "sqlstate", None)
    if isinstance(state, str):  # psycopg.Error
        return _by_sqlstate(state, name)
    if type(exc).__module__.startswith("psycopg") and name in ("OperationalError",
                                                               "InterfaceError"):
        return StoreUnavailable(f"the store is unavailable: {name}; retry")
    return InvalidPayload(f"the store could not write the data: {name}: {exc}"[:500])


def _by_sqlstate(state: str, name: str) -> Exception:
    if state.startswith(RETRYABLE_SQLSTATE_CLASSES) or state in RETRYABLE_SQLSTATES:
        return StoreUnavailable(f"the store is unavailable ({state}); retry")
    return InvalidPayload(f"the store refused the data ({state}: {name})")


def _settle(items: list[_Item], error: Exception | None) -> None:
    for item in items:
        if item.done.done():
            continue
        if error is None:
            item.done.set_result(None)
        else:
            item.done.set_exception(error)
