"""`tooltrail bench ingest`: how fast spans are acknowledged *and committed*, and at what cost.

One run, phases in order, every loop bounded in count and time, loopback only, on the
traffic of `collector.bench.traffic` (docs/observability.md, "Benchmark traffic"):

1. the floor (`collector.bench.floor`) — protobuf decode, tool spans picked by their
   attributes, their rows bulk-inserted, in this one process on the same store kind: what the
   server's figure is divided by ("ratio server / floor");
2. generator — how fast this process makes requests (it must not be the bottleneck);
3. a `tooltrail serve` subprocess (SQLite temp file, or `--database-url`) and, per transport,
   several closed-loop clients sending pre-built requests: acknowledged spans/s, ack latency,
   then the store is checked to hold every acknowledged call;
4. half load — paced at half the best rate: ack latency p50/p99, and time-to-score;
5. the SDK's real exporters (BatchSpanProcessor + OTLP gRPC / HTTP exporters);
6. overload — paced at twice the best rate, clients retrying as OTLP exporters do: peak RSS,
   retryable answers, nothing acknowledged missing.

`--redaction-rules FILE`, `--signals-ab PAIRS`, `--archive-ab PAIRS` and `--logs-ab PAIRS`
instead (or, for redaction, first) compare the server with a feature off and on — its flags, or
for logs the traffic: tool-call content in log records beside the spans — in interleaved pairs
of legs (`collector.bench.ab`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import Engine, text

from tooltrail.collector.bench.ab import Leg, Side, Summary, run_pairs
from tooltrail.collector.bench.floor import floor_runs
from tooltrail.collector.bench.load import (
    GrpcSender,
    HttpSender,
    Send,
    Stats,
    run_clients,
    run_open_loop,
)
from tooltrail.collector.bench.memory import MemorySampler, cpu_by_process, cpu_by_role
from tooltrail.collector.bench.process import ServerProcess, serve, workers
from tooltrail.collector.bench.traffic import RequestFactory, Shape
from tooltrail.collector.clihelp import HelpFormatter, Parser
from tooltrail.collector.extract import ExtractOptions, decoding, otlp
from tooltrail.collector.ingest import extract_safely
from tooltrail.collector.receivers.codec import PROTOBUF, decode_body
from tooltrail.collector.store.db import make_engine, migrate
from tooltrail.collector.store.persist import prepare

MB = 1024 * 1024
FLOOR = "floor: decode + pick tool spans + bulk insert (spans/s)"
EXPECTATION = {"id": "bench-refund", "selector": {"conversation": "*"}, "match": "in_order",
               "calls": [{"name": "search_orders"}]}


@dataclass
class Report:
    """Every figure of one run, printed and optionally written as JSON."""

    store: str
    shape: dict[str, int]
    figures: dict[str, Any] = field(default_factory=dict)
    prefix: str = ""  # the walk the figures being added are of (`--paths`), when several

    def add(self, key: str, value: Any) -> None:
        """Record a figure and print it."""
        key = self.prefix + key
        self.figures[key] = value
        print(f"  {key:<44} {_fmt(value)}", flush=True)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}" if value < 100 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def generator_rate(shape: Shape, seconds: float = 1.0) -> float:
    """Spans/s this process can make requests at (stamping ids into pre-built bytes)."""
    factory = RequestFactory(shape)
    made = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds and made < 100_000:
        factory.make()
        made += 1
    return made * factory.span_count / (time.perf_counter() - started)


def senders(server: ServerProcess, transport: str, clients: int, connections: int = 1,
            logs: Callable[[bytes], bytes] | None = None) -> list[Any]:
    """`clients` senders of one transport ("grpc", "http" or "mixed"; with `logs`, "http"
    only, each request sent with its logs request)."""
    out: list[Any] = []
    for i in range(clients):
        kind = transport if transport != "mixed" else ("grpc" if i % 2 == 0 else "http")
        out.append(GrpcSender(server.grpc_endpoint) if kind == "grpc"
                   else HttpSender(server.base_url, connections=connections, logs=logs))
    return out


async def drive(server: ServerProcess, transport: str, clients: int, factory: RequestFactory,
                seconds: float, rate: float | None = None, max_requests: int = 1_000_000,
                grace: float = 30.0) -> Stats:
    """One phase of load: closed-loop clients, or an open loop at `rate` requests/s over
    `clients` connections. Closes its connections after. A factory of `Shape.logs` traffic
    sends each request's logs request beside it (HTTP only)."""
    if factory.shape.logs and transport != "http":
        raise ValueError("traffic with log records is sent over HTTP only")
    group = senders(server, transport, clients, connections=1 if rate is None else 64,
                    logs=factory.logs if factory.shape.logs else None)
    sends: list[Send] = list(group)
    try:
        if rate is not None:
            return await run_open_loop(sends, factory, rate=rate, seconds=seconds,
                                       max_requests=max_requests, grace=grace)
        return await run_clients(sends, factory, seconds=seconds, max_requests=max_requests,
                                 grace=grace)
    finally:
        for sender in group:
            await sender.close()


def committed_calls(engine: Engine, factory: RequestFactory) -> int:
    """Tool calls in the store from `factory`'s requests."""
    with engine.connect() as conn:
        found = conn.execute(
            text("SELECT count(*) FROM tool_calls WHERE trace_id LIKE :p"),
            {"p": factory.trace_prefix + "%"},
        ).scalar()
    return int(found or 0)


def missing_acknowledged(engine: Engine, factory: RequestFactory, stats: Stats) -> int:
    """Acknowledged turns whose trace is not in the store (must be 0)."""
    wanted = {tid for marker in stats.acked_markers for tid in factory.trace_ids(marker)}
    if not wanted:
        return 0
    with engine.connect() as conn:
        stored = {
            row[0] for row in conn.execute(
                text("SELECT trace_id FROM turns WHERE trace_id LIKE :p"),
                {"p": factory.trace_prefix + "%"},
            )
        }
    return len(wanted - stored)


def time_to_score(server: ServerProcess, factory: RequestFactory, stats: Stats,
                  timeout: float = 60.0) -> float | None:
    """Seconds from the last acknowledgement to the result of its conversation."""
    if stats.last_group is None:
        return None
    key = factory.conversation_keys(stats.last_group)[-1]
    deadline = time.monotonic() + timeout
    with httpx.Client(base_url=server.base_url, timeout=10) as client:
        while time.monotonic() < deadline:
            answer = client.get(f"/api/v1/conversations/{key}/results")
            if answer.status_code == 200 and answer.json().get("data"):
                return time.perf_counter() - stats.last_ack
            time.sleep(0.05)
    return None


def sdk_phase(server: ServerProcess, transport: str, seconds: float, clients: int) -> float:
    """Spans/s acknowledged through the OTel SDK: `clients` agents, each with its own
    TracerProvider, BatchSpanProcessor and real OTLP exporter (the SDK's own pipeline)."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    acked = [0]
    lock = threading.Lock()

    def exporter() -> SpanExporter:
        if transport == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

            return OTLPSpanExporter(endpoint=server.grpc_endpoint, insecure=True)
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
            OTLPSpanExporter as HttpSpanExporter,
        )

        return HttpSpanExporter(endpoint=f"{server.base_url}/v1/traces")

    class Counting(SpanExporter):
        def __init__(self) -> None:
            self.inner = exporter()

        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            result = self.inner.export(spans)
            if result == SpanExportResult.SUCCESS:
                with lock:
                    acked[0] += len(spans)
            return result

        def shutdown(self) -> None:
            self.inner.shutdown()

    stop = time.monotonic() + seconds
    args = json.dumps({"order_id": "A-000001", "customer": "c-1234", "note": "x" * 90})
    result = json.dumps({"status": "ok", "items": [{"sku": "X-1", "qty": 2}], "note": "y" * 240})
    providers = []
    for _ in range(clients):
        provider = TracerProvider(resource=Resource.create({"service.name": "bench-sdk-agent"}))
        provider.add_span_processor(BatchSpanProcessor(
            Counting(), max_queue_size=50_000, max_export_batch_size=512,
            schedule_delay_millis=200,
        ))
        providers.append(provider)

    def agent(worker: int) -> None:
        tracer = providers[worker].get_tracer("tooltrail.bench.sdk")
        turn = 0
        while time.monotonic() < stop and turn < 200_000:
            conversation = f"sdk-{worker}-{turn // 5}"
            with tracer.start_as_current_span("invoke_agent support", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support",
                "gen_ai.conversation.id": conversation,
            }):
                with tracer.start_as_current_span("chat gpt-4o", attributes={
                    "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                }):
                    pass
                for i in range(2 + turn % 2):
                    with tracer.start_as_current_span("execute_tool search_orders", attributes={
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": "search_orders",
                        "gen_ai.tool.call.id": f"call_{turn}_{i}",
                        "gen_ai.tool.call.arguments": args,
                        "gen_ai.tool.call.result": result,
                    }):
                        pass
            turn += 1

    started = time.perf_counter()
    workers = [threading.Thread(target=agent, args=(i,)) for i in range(clients)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    for provider in providers:
        provider.force_flush(60_000)
    elapsed = time.perf_counter() - started
    for provider in providers:
        provider.shutdown()
    return acked[0] / elapsed


async def run(args: argparse.Namespace) -> Report:
    """Every phase (or only the A/B comparisons asked for); returns the report."""
    shape = Shape(spans=args.spans_per_request)
    with tempfile.TemporaryDirectory(prefix="tooltrail-bench-") as tmp:
        url = args.database_url or f"sqlite:///{Path(tmp) / 'bench.db'}"
        store = "postgresql" if url.startswith("postgresql") else "sqlite"
        factory = RequestFactory(shape)
        report = Report(store, {"spans_per_request": factory.span_count,
                                "tool_spans_per_request": factory.tool_calls,
                                "turns_per_request": factory.turns,
                                "conversations_per_request": factory.conversations,
                                "clients": args.clients})
        print(f"tooltrail bench ingest — store {store}, {factory.span_count} spans/request "
              f"({factory.tool_calls} tool spans, {factory.turns} turns, "
              f"{factory.conversations} conversations of "
              f"{'/'.join(map(str, shape.conversation_turns))} turns), "
              f"{args.clients} clients per phase", flush=True)
        for feature, pairs, off, on, traffic in comparisons(args, shape):
            await ab(args, report, Path(tmp), feature, pairs, (off, shape), (on, traffic))
        if args.redaction_only or args.signals_ab or args.archive_ab or args.logs_ab:
            return report
        floor(args, report, shape, url, tmp)
        report.add("generator (spans/s)", generator_rate(shape))
        if args.server_python:  # another install's schema: its own migrations
            done = subprocess.run([args.server_python, "-m", "tooltrail", "migrate",
                                   "--database-url", url], capture_output=True, text=True,
                                  check=False)
            if done.returncode != 0:
                raise SystemExit(f"--server-python {args.server_python}: its migrate failed: "
                                 f"{done.stderr.strip()[-2000:]}")
            report.add("server interpreter", args.server_python)
        else:
            migrate(url)
        flags = ["--settle-seconds", str(args.settle_seconds), *args.server_flag]
        if args.worker != "embedded":
            flags.append("--no-worker")
        report.add("scoring worker", args.worker)
        for path in args.paths:  # the same phases on each walk, in this one run
            report.prefix = f"[{path}] " if len(args.paths) > 1 else ""
            report.add("in-process stages decode / extract / prepare (CPU µs/span)",
                       stages(shape, path))
            with serve(url, *flags, python=args.server_python, env=PATH_ENV[path]) as server, \
                    scoring_worker(args, url):
                sampler = MemorySampler(server.process.pid).start()
                engine = make_engine(url)
                try:
                    await measure(args, report, server, sampler, engine, shape)
                finally:
                    sampler.stop()
                    engine.dispose()
        return report


# the environment that makes a server (and its ingest children) take each walk
PATH_ENV = {"compiled": {"TOOLTRAIL_PURE_PYTHON": "0"}, "pure": {"TOOLTRAIL_PURE_PYTHON": "1"}}


def stages(shape: Shape, path: str, requests: int = 12) -> str:
    """CPU µs per span of decode, extract and prepare (as an ingest child runs them) on one
    walk, in this process: where the children's time goes."""
    walk, json_decoding = ((otlp.COMPILED_WALK, otlp.COMPILED_JSON) if path == "compiled"
                           else (otlp.pure_span_views, decoding.pure_decode_json))
    if walk is None or json_decoding is None:
        return "n/a (the compiled walk is not built)"
    factory = RequestFactory(shape)
    bodies = [factory.make()[0] for _ in range(requests)]
    chosen = otlp.span_views, decoding.decode_json
    otlp.span_views, decoding.decode_json = walk, json_decoding
    spent = [0.0, 0.0, 0.0]
    try:
        for body in bodies:
            t0 = time.process_time()
            request, _ = decode_body(body, PROTOBUF, None, 1 << 30)
            t1 = time.process_time()
            batch = extract_safely(request, ExtractOptions(), body)  # as run_pipeline does
            t2 = time.process_time()
            prepare(batch)
            t3 = time.process_time()
            for i, d in enumerate((t1 - t0, t2 - t1, t3 - t2)):
                spent[i] += d
    finally:
        otlp.span_views, decoding.decode_json = chosen
    spans = requests * factory.span_count
    return " / ".join(f"{d * 1e6 / spans:.1f}" for d in spent) + (
        f"; all {sum(spent) * 1e6 / spans:.1f}")


def floor(args: argparse.Namespace, report: Report, shape: Shape, url: str, tmp: str) -> float:
    """The floor (collector.bench.floor) in `--floor-rounds` rounds; returns the best."""
    floor_url = url if url.startswith("postgresql") else f"sqlite:///{Path(tmp) / 'floor.db'}"
    runs = floor_runs(floor_url, shape, args.floor_requests, args.group, args.seconds,
                      args.floor_rounds)
    rates = [r.spans_per_second for r in runs]
    report.add("floor: rounds (spans/s)", " / ".join(f"{r:,.0f}" for r in rates))
    report.add("floor: per CPU second, best round", max(r.spans_per_cpu_second for r in runs))
    report.add(FLOOR, max(rates))
    return max(rates)


def comparisons(args: argparse.Namespace,
                shape: Shape) -> list[tuple[str, int, list[str], list[str], Shape]]:
    """The A/B comparisons asked for: (feature, pairs, server flags off, on, traffic on); the
    off side is sent `shape`."""
    found: list[tuple[str, int, list[str], list[str], Shape]] = []
    if args.redaction_rules:
        # the archive keeps spans before redaction, so it is off with rules: off on both sides
        same = ["--span-attributes", args.span_attributes, "--archive-spans=false"]
        found.append(("redaction", args.redaction_rounds, same, [
            *same, "--redaction-rules", args.redaction_rules,
            "--redaction-secret", args.redaction_secret], shape))
    if args.signals_ab:
        found.append(("signals", args.signals_ab, ["--no-signals"], ["--signals"], shape))
    if args.archive_ab:
        found.append(("archive", args.archive_ab, ["--archive-spans=false"],
                      ["--archive-spans=true"], shape))
    if args.logs_ab:
        found.append(("logs", args.logs_ab, [], [], replace(shape, logs=True)))
    return found


async def ab(args: argparse.Namespace, report: Report, tmp: Path, feature: str, pairs: int,
             off: tuple[list[str], Shape], on: tuple[list[str], Shape]) -> None:
    """`feature` off vs on (collector.bench.ab): interleaved pairs of legs, each a fresh store
    and server (its flags) driven `--seconds` over HTTP by `--clients` clients (its traffic);
    per leg and the median cost with its spread."""
    base = ["--settle-seconds", str(args.settle_seconds), *args.server_flag]

    async def warm_up(server: ServerProcess) -> Stats:
        return await drive(server, "http", args.clients, RequestFactory(off[1]), 1.0,
                           max_requests=4 * args.clients)

    def side(flags: list[str], traffic: Shape) -> Side:
        async def load(server: ServerProcess) -> Stats:
            return await drive(server, "http", args.clients, RequestFactory(traffic),
                               args.seconds)
        return Side([*base, *flags], load)

    def told(n: int, leg: Leg) -> None:
        report.add(f"{feature} {leg.side}, pair {n}: spans/s | CPU µs/span",
                   f"{leg.wall_rate:,.0f} | {leg.cpu_per_span:.1f}"
                   + ("" if leg.drained else " (not all scored in time)"))

    pairs_run = await run_pairs(pairs, args.database_url, tmp, side(*off), side(*on),
                                None if args.ab_no_expectation else EXPECTATION, warm_up, told)
    summary = Summary.of(pairs_run)
    report.add(f"{feature} cost, CPU per span: median", Summary.line(summary.cpu_costs))
    report.add(f"{feature} cost, wall rate: median", Summary.line(summary.wall_costs))
    report.figures[f"{feature} cost CPU (%)"] = statistics.median(summary.cpu_costs)
    report.figures[f"{feature} cost wall (%)"] = statistics.median(summary.wall_costs)


@contextlib.contextmanager
def scoring_worker(args: argparse.Namespace, url: str) -> Iterator[None]:
    """A separate `tooltrail worker` process when asked for (`--worker process`)."""
    if args.worker != "process":
        yield
        return
    with workers(url, 1, "--settle-seconds", str(args.settle_seconds)):
        yield


async def measure(args: argparse.Namespace, report: Report, server: ServerProcess,
                  sampler: MemorySampler, engine: Engine, shape: Shape) -> None:
    """The phases against the running server."""
    httpx.post(f"{server.base_url}/api/v1/expectations", json=EXPECTATION, timeout=10)
    await drive(server, "grpc", args.clients, RequestFactory(shape), min(2.0, args.seconds))
    best = 0.0
    for transport in args.transports:
        factory = RequestFactory(shape)
        cpu, own = cpu_by_process(server.process.pid), time.process_time()
        stats = await drive(server, transport, args.clients, factory, args.seconds)
        cpu_used = cpu_by_role(cpu_by_process(server.process.pid), cpu)
        cpu_used["load generator"] = time.process_time() - own
        committed = committed_calls(engine, factory)
        name = f"{transport}: acknowledged+committed"
        report.add(f"{name} (spans/s)", stats.spans_per_second)
        report.add(f"{transport}: CPU per span by process (µs)",
                   cpu_per_span(cpu_used, stats.acked_requests * factory.span_count))
        report.add(f"{transport}: ack latency p50 / p99 (ms)",
                   f"{stats.percentile(50) * 1e3:.0f} / {stats.percentile(99) * 1e3:.0f}")
        report.add(f"{transport}: acknowledged missing from store",
                   missing_acknowledged(engine, factory, stats))
        report.add(f"{transport}: calls committed ≥ acknowledged",
                   committed >= stats.acked_requests * factory.tool_calls)
        if stats.retryable or stats.refused:
            report.add(f"{transport}: retryable / refused answers",
                       f"{stats.retryable} / {stats.refused} {stats.messages}")
        best = max(best, stats.spans_per_second)
    report.add("best acknowledged+committed (spans/s)", best)
    limit = report.figures[FLOOR]
    report.add("ratio server / floor", best / limit if limit else 0.0)
    report.add("peak memory at full load (MB)", memory(sampler))

    factory = RequestFactory(shape)
    rate = best / 2 / factory.span_count
    stats = await drive(server, "mixed", max(args.clients, 8), factory, args.seconds, rate=rate)
    report.add("half load: offered / acknowledged (spans/s)",
               f"{rate * factory.span_count:,.0f} / {stats.spans_per_second:,.0f}")
    report.add("half load: ack latency p50 / p99 (ms)",
               f"{stats.percentile(50) * 1e3:.0f} / {stats.percentile(99) * 1e3:.0f}")
    tts = time_to_score(server, factory, stats) if args.worker != "none" else None
    report.add(f"time-to-score after last ack, settle {args.settle_seconds}s (s)",
               "n/a (no worker)" if args.worker == "none"
               else "none within 60 s" if tts is None else round(tts, 2))

    for transport in args.sdk_transports:
        spans = await asyncio.to_thread(sdk_phase, server, transport, args.sdk_seconds,
                                        args.sdk_clients)
        report.add(f"SDK exporter {transport} (spans/s, client-bound)", spans)

    if args.overload_seconds > 0:
        sampler.reset()
        factory = RequestFactory(shape)
        rate = 2 * best / factory.span_count
        stats = await drive(server, "mixed", args.overload_clients, factory,
                            args.overload_seconds, rate=rate, grace=60.0)
        report.add("overload: offered (spans/s, 2× best)", rate * factory.span_count)
        report.add("overload: acknowledged (spans/s)", stats.spans_per_second)
        report.add("overload: retryable answers", stats.retryable)
        report.add("overload: refused / transport errors",
                   f"{stats.refused} / {stats.transport_errors}")
        report.add("overload: acknowledged missing from store",
                   missing_acknowledged(engine, factory, stats))
        report.add("overload: peak memory (MB)", memory(sampler))
        report.add("overload: server alive", server.process.poll() is None)


def cpu_per_span(cpu: dict[str, float], spans: int) -> str:
    """CPU µs per acknowledged span of each process role (the server, its children by role,
    this process's load generator) and of all of them, as text."""
    if spans <= 0:
        return "n/a (nothing acknowledged)"
    parts = [f"{who} {seconds * 1e6 / spans:.1f}" for who, seconds in cpu.items() if seconds > 0]
    return f"{', '.join(parts)}; all {sum(cpu.values()) * 1e6 / spans:.1f}"


def memory(sampler: MemorySampler) -> str:
    """Peak memory of the server as text: its own RSS, and RSS / PSS summed with its workers."""
    return (f"server RSS {sampler.peak_main / MB:.0f}; with ingest workers RSS "
            f"{sampler.peak_total / MB:.0f}, PSS {sampler.peak_pss / MB:.0f}")


def _default_paths() -> list[str]:
    return ["compiled", "pure"] if otlp.COMPILED_WALK is not None else ["pure"]


DEFAULT_PATHS = _default_paths()


def parser() -> argparse.ArgumentParser:
    """Command-line flags."""
    p = Parser(prog="tooltrail bench ingest", description=__doc__,
                                formatter_class=HelpFormatter)
    p.add_argument("--database-url", help="store to test (default: a temporary SQLite file)")
    p.add_argument("--seconds", type=float, default=10.0, help="length of each load phase")
    p.add_argument("--clients", type=int, default=4, help="concurrent clients per phase")
    p.add_argument("--spans-per-request", type=int, default=500)
    p.add_argument("--transports", nargs="+", default=["grpc", "http"],
                   choices=["grpc", "http", "mixed"])
    p.add_argument("--sdk-transports", nargs="*", default=["grpc", "http"],
                   choices=["grpc", "http"])
    p.add_argument("--sdk-seconds", type=float, default=5.0)
    p.add_argument("--sdk-clients", type=int, default=4,
                   help="agents, each with its own SDK provider and exporter")
    p.add_argument("--overload-seconds", type=float, default=15.0,
                   help="length of the 2× overload phase (0: skip)")
    p.add_argument("--overload-clients", type=int, default=8, help="connections (open loop)")
    p.add_argument("--settle-seconds", type=float, default=1.0)
    p.add_argument("--worker", choices=["embedded", "process", "none"], default="embedded",
                   help="scoring: in the server (the default of `serve`), a separate "
                        "`tooltrail worker` process, or none (receivers alone)")
    p.add_argument("--floor-requests", type=int, default=120,
                   help="requests per round of the floor")
    p.add_argument("--floor-rounds", type=int, default=3,
                   help="rounds of the floor (the best is the floor)")
    p.add_argument("--group", type=int, default=8, help="requests per transaction of the floor")
    p.add_argument("--server-python", metavar="PYTHON",
                   help="run the server and its migrations with this interpreter: another "
                   "tooltrail install (an older commit's virtualenv), to compare two builds on "
                   "the same traffic; the floor and the clients stay this install's")
    p.add_argument("--server-flag", action="append", default=[],
                   help="extra flag for `tooltrail serve` (repeat; e.g. --server-flag=--no-worker)")
    p.add_argument("--redaction-rules", metavar="FILE",
                   help="first compare the server without and with these redaction rules "
                   "(docs/redaction.md) in interleaved pairs of legs, and print the cost")
    p.add_argument("--redaction-secret", default="bench-secret", help="their HMAC key")
    p.add_argument("--span-attributes", default="all", help="their span attributes setting")
    p.add_argument("--redaction-rounds", type=int, default=3, metavar="PAIRS",
                   help="pairs of legs without and with the rules (the median is reported)")
    p.add_argument("--redaction-only", action="store_true",
                   help="with --redaction-rules: stop after that comparison")
    p.add_argument("--signals-ab", type=int, default=0, metavar="PAIRS",
                   help="instead of the phases: PAIRS of legs with production signals off "
                   "and on (interleaved, fresh stores), and the cost of signals on ingest")
    p.add_argument("--archive-ab", type=int, default=0, metavar="PAIRS",
                   help="instead of the phases: PAIRS of legs with the raw span archive "
                   "(--archive-spans) off and on, and its cost on ingest")
    p.add_argument("--logs-ab", type=int, default=0, metavar="PAIRS",
                   help="instead of the phases: PAIRS of legs sent spans only, and the same "
                   "traffic with every tool call's content in OTLP log records (GenAI "
                   "operation-details events) sent beside the spans to /v1/logs")
    p.add_argument("--ab-no-expectation", action="store_true",
                   help="A/B legs without the expectation that selects every conversation "
                   "(production without expectations: the worker reads trajectories only for "
                   "signals)")
    p.add_argument("--paths", nargs="+", choices=sorted(PATH_ENV), default=DEFAULT_PATHS,
                   help="the walks to measure, one after the other in this run: compiled "
                        "(tooltrail.collector.extract._wire) and/or pure (TOOLTRAIL_PURE_PYTHON=1)")
    p.add_argument("--json", help="also write the figures to this file")
    return p


def main(argv: list[str]) -> int:
    """Entry point of `tooltrail bench ingest`."""
    p = parser()
    args = p.parse_args(argv)
    if args.server_python and (args.worker == "process" or args.redaction_rules
                               or args.signals_ab or args.archive_ab or args.logs_ab):
        p.error("--server-python runs the standard phases with an embedded or no worker; "
                "the A/B modes and --worker process use this install")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request otherwise
    report = asyncio.run(run(args))
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"store": report.store, "shape": report.shape, "figures": report.figures},
            indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
