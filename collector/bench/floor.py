"""The floor of `tooltrail bench ingest`: the least work that stores the tool calls of the same
requests, in one process on the same store kind — its own minimal code, not the service's.

Per request: protobuf decode; one loop over every span's attributes that picks tool spans by
the attributes the conventions test (`gen_ai.operation.name = execute_tool`,
`openinference.span.kind = TOOL`) and reads the call's fields as they were sent (no JSON
decoding, no conversations, turns or requested calls); their rows bulk-inserted, one
transaction per `group` requests: SQLite `executemany` (WAL, `synchronous=NORMAL`, as the
service's store), PostgreSQL `COPY`. What the service does beyond this is what it costs.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Status
from sqlalchemy.engine import make_url

from tooltrail.collector.bench.traffic import RequestFactory, Shape

TABLE = "bench_floor_calls"
COLUMNS = ("trace_id", "span_id", "parent_span_id", "name", "call_id", "arguments", "result",
           "status", "error", "start_ns", "end_ns")
CREATE = (f"CREATE TABLE {TABLE} (trace_id TEXT NOT NULL, span_id TEXT NOT NULL, "
          "parent_span_id TEXT, name TEXT, call_id TEXT, arguments TEXT, result TEXT, "
          "status TEXT NOT NULL, error TEXT, start_ns BIGINT, end_ns BIGINT, "
          "PRIMARY KEY (trace_id, span_id))")
TOOL_MARKS = {("gen_ai.operation.name", "execute_tool"), ("openinference.span.kind", "TOOL")}
FIELDS = {"gen_ai.tool.name": 0, "gen_ai.tool.call.id": 1, "gen_ai.tool.call.arguments": 2,
          "gen_ai.tool.call.result": 3, "tool.name": 0, "input.value": 2, "output.value": 3}

Row = tuple[Any, ...]


def tool_rows(body: bytes) -> list[Row]:
    """The rows of the tool spans of one serialised ExportTraceServiceRequest."""
    request = ExportTraceServiceRequest.FromString(body)
    rows: list[Row] = []
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                tool = False
                found: list[str | None] = [None, None, None, None]
                for kv in span.attributes:
                    key = kv.key
                    slot = FIELDS.get(key)
                    if slot is not None:
                        found[slot] = kv.value.string_value
                    elif (key, kv.value.string_value) in TOOL_MARKS:
                        tool = True
                if not tool:
                    continue
                failed = span.status.code == Status.STATUS_CODE_ERROR
                rows.append((span.trace_id.hex(), span.span_id.hex(),
                             span.parent_span_id.hex() or None, found[0] or span.name, found[1],
                             found[2], found[3], "error" if failed else "ok",
                             span.status.message if failed else None,
                             span.start_time_unix_nano, span.end_time_unix_nano))
    return rows


class FloorStore:
    """The floor's own table in a store of the benchmark's kind, dropped on close."""

    def __init__(self, url: str) -> None:
        parsed = make_url(url)
        self.kind = parsed.get_backend_name()
        if self.kind == "sqlite":
            if not parsed.database:
                raise ValueError("the floor needs a SQLite file, not an in-memory store")
            self.sqlite = sqlite3.connect(parsed.database, isolation_level=None)
            self.sqlite.execute("PRAGMA journal_mode=WAL")
            self.sqlite.execute("PRAGMA synchronous=NORMAL")
            self.sqlite.execute(f"DROP TABLE IF EXISTS {TABLE}")
            self.sqlite.execute(CREATE)
        elif self.kind == "postgresql":
            conninfo = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
            self.pg = psycopg.connect(conninfo)
            with self.pg.transaction():
                self.pg.execute(f"DROP TABLE IF EXISTS {TABLE}")
                self.pg.execute(CREATE)
        else:
            raise ValueError(f"no floor for store kind {self.kind!r}")

    def write(self, rows: Sequence[Row]) -> None:
        """Insert `rows` in one transaction."""
        if self.kind == "sqlite":
            placeholders = ", ".join("?" * len(COLUMNS))
            self.sqlite.execute("BEGIN")
            self.sqlite.executemany(f"INSERT INTO {TABLE} VALUES ({placeholders})", rows)
            self.sqlite.execute("COMMIT")
            return
        with self.pg.transaction(), self.pg.cursor() as cur, cur.copy(
                f"COPY {TABLE} ({', '.join(COLUMNS)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)

    def count(self) -> int:
        query = f"SELECT count(*) FROM {TABLE}"
        if self.kind == "sqlite":
            return int(self.sqlite.execute(query).fetchone()[0])
        found = self.pg.execute(query).fetchone()
        return int(found[0]) if found else 0

    def close(self) -> None:
        if self.kind == "sqlite":
            self.sqlite.execute(f"DROP TABLE IF EXISTS {TABLE}")
            self.sqlite.close()
        else:
            with self.pg.transaction():
                self.pg.execute(f"DROP TABLE IF EXISTS {TABLE}")
            self.pg.close()


@dataclass(frozen=True)
class FloorRun:
    """One run of the floor over pre-built requests."""

    spans: int
    calls: int
    wall: float  # seconds
    cpu: float  # CPU seconds of this process

    @property
    def spans_per_second(self) -> float:
        return self.spans / self.wall if self.wall else 0.0

    @property
    def spans_per_cpu_second(self) -> float:
        return self.spans / self.cpu if self.cpu else 0.0


def run_floor(url: str, bodies: Iterable[bytes], spans_per_request: int, group: int,
              seconds: float) -> FloorRun:
    """Decode, pick and insert `bodies`, `group` requests per transaction, stopping after
    `seconds` (at a transaction's end); checks every picked row is stored."""
    store = FloorStore(url)
    try:
        spans = calls = 0
        pending: list[Row] = []
        in_group = 0
        wall, cpu = time.perf_counter(), time.process_time()
        for body in bodies:
            rows = tool_rows(body)
            pending += rows
            spans, calls, in_group = spans + spans_per_request, calls + len(rows), in_group + 1
            if in_group == group:
                store.write(pending)
                pending, in_group = [], 0
                if time.perf_counter() - wall > seconds:
                    break
        if pending:
            store.write(pending)
        run = FloorRun(spans, calls, time.perf_counter() - wall, time.process_time() - cpu)
        stored = store.count()
        if stored != calls:
            raise RuntimeError(f"the floor stored {stored} of {calls} tool calls")
        return run
    finally:
        store.close()


def floor_runs(url: str, shape: Shape, requests: int, group: int, seconds: float,
               rounds: int) -> list[FloorRun]:
    """`rounds` runs of the floor, each over `requests` fresh requests of `shape`."""
    factory = RequestFactory(shape)
    out = []
    for _ in range(rounds):
        bodies = [factory.make()[0] for _ in range(requests)]
        out.append(run_floor(url, bodies, factory.span_count, group, seconds))
    return out
