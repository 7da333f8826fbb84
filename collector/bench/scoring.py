"""`tooltrail bench scoring`: rescoring throughput with 1 and 2 workers, and time-to-score.

1. Stores N ten-call conversations (PostgreSQL by default: a fresh database on the local
   server, dropped afterwards) through the real writer, marked as already scored (as
   conversations stored long ago are), so that step 2 times the rescoring job alone.
2. For each worker count: a new expectation version starts a rescoring job over every
   stored conversation; `tooltrail worker` processes run it; conversations/s is reported.
3. Time-to-score under ingest: a `tooltrail serve` gets one conversation per OTLP/HTTP request
   at a steady rate for a bounded time; each conversation's time from its acknowledgement to
   its result being readable over REST is measured; p50/p99 are compared to settle + 1 s.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
import uuid
from datetime import UTC, datetime

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from sqlalchemy import create_engine, text

from tooltrail.collector.bench.process import serve, workers
from tooltrail.collector.bench.seed import seed
from tooltrail.collector.clihelp import HelpFormatter, Parser
from tooltrail.collector.store import queries
from tooltrail.collector.store.db import make_engine, migrate, normalise_url
from tooltrail.collector.store.jobs import get_job

EXPECTATION = {
    "id": "bench",
    "match": "in_order",
    "arguments": "partial",
    "calls": [
        {"name": "lookup_order", "arguments": {"order_id": {"$type": "integer"}}},
        {"name": "issue_refund"},
    ],
    "forbid": ["delete_*"],
    "max_calls": 20,
}


def temp_database(admin_url: str) -> str:
    name = f"tooltrail_bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(normalise_url(admin_url), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return admin_url.rsplit("/", 1)[0] + "/" + name


def drop_database(admin_url: str, url: str) -> None:
    admin = create_engine(normalise_url(admin_url), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)'))
    admin.dispose()


def rescoring(url: str, worker_counts: list[int], timeout: float) -> None:
    engine = make_engine(url)
    for count in worker_counts:
        with engine.begin() as conn:
            exists = queries.latest_expectation(conn, "bench") is not None
            queries.add_expectation_version(conn, "bench", EXPECTATION, must_exist=exists)
            job_id = conn.execute(text("SELECT max(id) FROM jobs")).scalar_one()
        started = time.perf_counter()
        with workers(url, count, "--worker-poll-seconds", "0.05"):
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                with engine.connect() as conn:
                    job = get_job(conn, job_id)
                if job is not None and job["status"] == "done":
                    break
                time.sleep(0.1)
        elapsed = time.perf_counter() - started
        assert job is not None
        rate = job["done"] / elapsed if elapsed else 0.0
        print(
            f"rescoring, {count} worker(s): {job['done']}/{job['total']} conversations in "
            f"{elapsed:.1f} s = {rate:,.0f} conversations/s (status {job['status']})"
        )
    engine.dispose()


def _kv(key: str, value: str) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(string_value=value))


def conversation_request(key: str, index: int) -> bytes:
    """One agent turn: an invoke_agent root and two execute_tool spans."""
    request = ExportTraceServiceRequest()
    resource = request.resource_spans.add()
    resource.resource.attributes.append(_kv("service.name", "bench-agent"))
    spans = resource.scope_spans.add().spans
    trace_id = uuid.uuid4().bytes
    now = time.time_ns()
    root = spans.add(
        trace_id=trace_id,
        span_id=os.urandom(8),
        name="invoke_agent bench",
        start_time_unix_nano=now - 3_000_000,
        end_time_unix_nano=now,
    )
    root.attributes.extend(
        [_kv("gen_ai.operation.name", "invoke_agent"), _kv("gen_ai.conversation.id", key)]
    )
    for i, name in enumerate(("lookup_order", "issue_refund")):
        span = spans.add(
            trace_id=trace_id,
            span_id=os.urandom(8),
            parent_span_id=root.span_id,
            name=f"execute_tool {name}",
            start_time_unix_nano=now - 2_000_000 + i,
            end_time_unix_nano=now - 1_000_000 + i,
        )
        span.attributes.extend(
            [
                _kv("gen_ai.operation.name", "execute_tool"),
                _kv("gen_ai.tool.name", name),
                _kv("gen_ai.tool.call.arguments", f'{{"order_id": {index}}}'),
            ]
        )
    return request.SerializeToString()


def ensure_expectation(url: str) -> None:
    """The bench expectation exists (the rescoring runs create it; `--workers ""` skips them)."""
    engine = make_engine(url)
    with engine.begin() as conn:
        if queries.latest_expectation(conn, "bench") is None:
            queries.add_expectation_version(conn, "bench", EXPECTATION, must_exist=False)
    engine.dispose()


def time_to_score(url: str, seconds: float, rate: float, settle: float) -> None:
    ensure_expectation(url)
    acked: dict[str, float] = {}
    seen: dict[str, float] = {}
    with serve(url, "--settle-seconds", str(settle), "--worker-poll-seconds", "0.05") as server:
        stop = threading.Event()

        def poll() -> None:
            since = time.time() - 1
            with httpx.Client(base_url=server.base_url, timeout=10) as client:
                while not stop.is_set():
                    params: dict[str, str | int] = {
                        "expectation": "bench",
                        "limit": 1000,
                        "since": datetime.fromtimestamp(since, UTC).isoformat(),
                    }
                    polled_at = time.time()
                    page = client.get("/api/v1/results", params=params).json()
                    since = polled_at - 1  # results scored since the last poll, with margin
                    now = time.monotonic()
                    for row in page["data"]:
                        if row["conversation"].startswith("tts-"):
                            seen.setdefault(row["conversation"], now)
                    time.sleep(0.05)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        headers = {"content-type": "application/x-protobuf"}
        with httpx.Client(base_url=server.base_url, timeout=10) as client:
            started = time.monotonic()
            sent = 0
            while time.monotonic() - started < seconds:  # bounded in time and count
                key = f"tts-{sent}"
                response = client.post(
                    "/v1/traces", content=conversation_request(key, sent), headers=headers
                )
                if response.status_code == 200:
                    acked[key] = time.monotonic()
                sent += 1
                time.sleep(max(0.0, started + sent / rate - time.monotonic()))
        deadline = time.monotonic() + settle + 30
        while len(seen) < len(acked) and time.monotonic() < deadline:
            time.sleep(0.1)
        stop.set()
        poller.join(5)
    delays = sorted(seen[k] - acked[k] for k in acked if k in seen)
    if not delays:
        print("time-to-score: no result was seen")
        return
    p50 = statistics.median(delays)
    p99 = delays[min(len(delays) - 1, int(len(delays) * 0.99))]
    print(
        f"time-to-score under ingest ({len(acked)} conversations at {rate:.0f}/s, settle "
        f"{settle:.1f} s): p50 {p50:.2f} s, p99 {p99:.2f} s (target p99 <= {settle + 1:.1f} s); "
        f"{len(acked) - len(delays)} not scored in time"
    )


def main(argv: list[str] | None = None) -> int:
    parser = Parser(
        prog="tooltrail bench scoring",
        description=__doc__,
        formatter_class=HelpFormatter,
    )
    parser.add_argument(
        "--admin-url",
        default="postgresql+psycopg://postgres@127.0.0.1:5432/test",
        help="server on which a temporary database is created",
    )
    parser.add_argument("--database-url", help="use this database instead (kept)")
    parser.add_argument("--conversations", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--workers", default="1,2", help="worker counts to time, e.g. 1,2")
    parser.add_argument("--ingest-seconds", type=float, default=20.0)
    parser.add_argument("--ingest-rate", type=float, default=50.0, help="conversations/s")
    parser.add_argument("--settle", type=float, default=2.0)
    parser.add_argument("--timeout", type=float, default=600.0, help="per rescoring run")
    args = parser.parse_args(argv)
    url = args.database_url or temp_database(args.admin_url)
    try:
        migrate(url)
        engine = make_engine(url)
        took = seed(engine, args.conversations, args.calls)
        with engine.begin() as conn:  # stored long ago: settled and scored already
            conn.execute(text("UPDATE conversations SET scored_seq = change_seq"))
        engine.dispose()
        print(
            f"stored {args.conversations:,} conversations of {args.calls} calls in {took:.1f} s "
            f"({args.conversations / took:,.0f} conversations/s)"
        )
        rescoring(url, [int(n) for n in args.workers.split(",") if n], args.timeout)
        time_to_score(url, args.ingest_seconds, args.ingest_rate, args.settle)
    finally:
        if not args.database_url:
            drop_database(args.admin_url, url)
    return 0
