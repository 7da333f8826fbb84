"""Group commit: many ingest requests → one transaction; each is acknowledged after its commit."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import InterfaceError, OperationalError, SQLAlchemyError

from collector.errors import InvalidPayload, Overloaded, StoreUnavailable
from collector.metrics import Metrics
from collector.model import Batch
from collector.store.persist import record_ingest_errors, write_batches

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Item:
    batch: Batch
    size: int
    errors: list[dict[str, Any]]
    done: asyncio.Future[None] | None = field(default=None)


class Writer:
    """Writes batches in shared transactions, bounded by queued bytes."""

    def __init__(
        self,
        engine: Engine,
        metrics: Metrics,
        *,
        max_batch: int = 256,
        max_queue_bytes: int = 256 * 1024 * 1024,
    ) -> None:
        self.engine = engine
        self.metrics = metrics
        self.max_batch = max_batch
        self.max_queue_bytes = max_queue_bytes
        self.queued_bytes = 0
        self._queue: asyncio.Queue[_Item] | None = None
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
        await self._queue.join()
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None

    def check_room(self, size: int) -> None:
        """Raise Overloaded if `size` more bytes would overflow the queue (asked before reading)."""
        if self._queue is None:
            raise Overloaded("the writer is not running", retry_after=1.0)
        if self.queued_bytes and self.queued_bytes + size > self.max_queue_bytes:
            raise Overloaded("ingest queue is full", retry_after=1.0)

    async def write(self, batch: Batch, size: int, errors: list[dict[str, Any]]) -> None:
        """Queue a batch and return once it is committed; raises a retryable error otherwise."""
        self.check_room(size)
        assert self._queue is not None
        item = _Item(batch, size, errors, asyncio.get_running_loop().create_future())
        self.queued_bytes += size
        self.metrics.queue_bytes.set(self.queued_bytes)
        await self._queue.put(item)
        assert item.done is not None
        await item.done

    def record(self, errors: list[dict[str, Any]]) -> None:
        """Queue ingest-error rows without waiting (dropped if the writer is not running)."""
        if self._queue is not None and errors:
            self._queue.put_nowait(_Item(Batch((), ()), 0, errors))

    async def _run(self) -> None:
        assert self._queue is not None
        while True:
            items = [await self._queue.get()]
            while len(items) < self.max_batch and not self._queue.empty():
                items.append(self._queue.get_nowait())
            try:
                await self._commit(items)
            finally:
                for item in items:
                    self.queued_bytes -= item.size
                    self._queue.task_done()
                self.metrics.queue_bytes.set(self.queued_bytes)

    async def _commit(self, items: list[_Item]) -> None:
        started = time.perf_counter()
        try:
            await asyncio.to_thread(self._write, items)
        except SQLAlchemyError as exc:
            if len(items) > 1:  # isolate the request that failed; the others still commit
                for item in items:
                    await self._commit([item])
                return
            log.warning("write failed: %s", exc)
            _settle(items, _classify(exc))
            return
        except Exception as exc:  # loop boundary: never leave a client waiting forever
            self.metrics.loop_errors.labels("writer").inc()
            log.exception("writer failed")
            _settle(items, StoreUnavailable(f"write failed: {exc}"))
            return
        self.metrics.commit_seconds.observe(time.perf_counter() - started)
        _settle(items, None)

    def _write(self, items: list[_Item]) -> None:
        now = time.time()
        with self.engine.begin() as conn:
            write_batches(conn, [i.batch for i in items], now)
            record_ingest_errors(conn, [row for i in items for row in i.errors])


def _classify(exc: SQLAlchemyError) -> Exception:
    """A lost connection or timeout is retryable; data the store refuses is not."""
    if isinstance(exc, OperationalError | InterfaceError):
        return StoreUnavailable(f"the store is unavailable: {exc.__class__.__name__}")
    return InvalidPayload(f"the store rejected the data: {exc.__class__.__name__}")


def _settle(items: list[_Item], error: Exception | None) -> None:
    for item in items:
        if item.done is None or item.done.done():
            continue
        if error is None:
            item.done.set_result(None)
        else:
            item.done.set_exception(error)
