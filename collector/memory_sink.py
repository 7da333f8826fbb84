"""An in-memory BatchSink for tests: ingest and the receivers run unchanged in front of it, as
the OpenTelemetry Collector's receivers are tested in front of `consumertest`.

It keeps every batch written and every ingest-error row given (written with a batch, or
recorded alone), counts the bytes admitted, and refuses as the writer does: admission past
`max_bytes` is a retryable Overloaded, and a failure set with `fail_admit` / `fail_write`
(StoreUnavailable, Overloaded, any exception) is raised by every call until cleared.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tooltrail.collector.errors import Overloaded

__all__ = ["MemorySink", "MemoryTicket"]


class MemoryTicket:
    """Admitted bytes, given back on release (once)."""

    def __init__(self, sink: MemorySink, size: int) -> None:
        self._sink = sink
        self.size = size
        self.released = False

    def resize(self, size: int) -> None:
        if not self.released and size > self.size:
            self._sink.admitted_bytes += size - self.size
            self.size = size

    def release(self) -> None:
        if not self.released:
            self.released = True
            self._sink.admitted_bytes -= self.size


@dataclass
class MemorySink:
    """What ingest gave it: `batches` (prepared, in write order), `errors` (ingest_errors rows);
    `admitted_bytes` held by tickets not yet released."""

    max_bytes: int | None = None
    fail_admit: BaseException | None = None
    fail_write: BaseException | None = None
    batches: list[Any] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    admitted_bytes: int = 0

    def admit(self, size: int) -> MemoryTicket:
        if self.fail_admit is not None:
            raise self.fail_admit
        if (self.max_bytes is not None and self.admitted_bytes
                and self.admitted_bytes + size > self.max_bytes):
            raise Overloaded(f"ingest queue is full ({self.admitted_bytes} bytes waiting)",
                             retry_after=1.0)
        self.admitted_bytes += size
        return MemoryTicket(self, size)

    async def write(self, batch: Any, errors: list[dict[str, Any]]) -> None:
        """Keep the batch and its error rows, as a commit would; or raise `fail_write`."""
        if self.fail_write is not None:
            raise self.fail_write
        self.batches.append(batch)
        self.errors.extend(errors)

    def record(self, errors: list[dict[str, Any]]) -> None:
        self.errors.extend(errors)

    @property
    def calls(self) -> list[Any]:
        """Every tool call written, in order, as the pipeline prepared it (rows of
        collector.store.rows.CALL_FIELDS, with the service's `prepare`)."""
        return [call for batch in self.batches for call in batch.calls]

    @property
    def span_count(self) -> int:
        return sum(batch.span_count for batch in self.batches)

    def reset(self) -> None:
        """Forget what was written and recorded (admitted bytes stay with their tickets)."""
        self.batches.clear()
        self.errors.clear()
