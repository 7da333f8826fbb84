"""The benchmark commands run end to end (tiny sizes; the figures themselves are not asserted:
timings belong in benchmarks, not tests), and what they check about correctness holds."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.collector.receivers.test_logs_extract import trajectory
from tests.conftest import drop_postgres_database, new_postgres_database
from tooltrail.collector.bench import extract as bench_extract
from tooltrail.collector.bench.floor import run_floor, tool_rows
from tooltrail.collector.bench.ingest import DEFAULT_PATHS
from tooltrail.collector.bench.traffic import TOOLS, RequestFactory, Shape
from tooltrail.collector.extract import ExtractOptions, extract, otlp
from tooltrail.collector.readers import read_logs


def run(*args: str, timeout: float = 240) -> str:
    done = subprocess.run([sys.executable, "-m", "tooltrail", "bench", *args],
                          capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_bench_scoring_runs_a_job_and_scores_under_ingest() -> None:
    url = new_postgres_database()
    try:
        out = run("scoring", "--database-url", url, "--conversations", "300", "--workers", "1",
                  "--ingest-seconds", "2", "--ingest-rate", "20", "--settle", "0.5")
    finally:
        drop_postgres_database(url)
    assert re.search(r"1 worker\(s\): 300/300 conversations in .* \(status done\)", out), out
    assert re.search(r"time-to-score under ingest \(\d+ conversations.*; 0 not scored", out), out


def test_bench_ingest_loses_nothing(tmp_path: Path) -> None:
    out = run("ingest", "--database-url", f"sqlite:///{tmp_path}/b.db", "--seconds", "1",
              "--sdk-seconds", "1", "--sdk-clients", "1", "--overload-seconds", "2",
              "--floor-requests", "8", "--floor-rounds", "1", "--spans-per-request", "100")
    for line in ("grpc: acknowledged missing from store", "http: acknowledged missing from store",
                 "overload: acknowledged missing from store"):
        assert re.search(re.escape(line) + r"\s+0\n", out), out
    assert re.search(r"overload: server alive\s+1", out), out
    assert re.search(r"time-to-score after last ack.*\s\d+\.\d+\n", out), out
    assert re.search(r"ratio server / floor\s+\d+\.\d+\n", out), out
    # both walks in the one run (--paths' default when the compiled walk is built), each with
    # its in-process stages and its server's figures
    for path in DEFAULT_PATHS:
        prefix = re.escape(f"[{path}] ") if len(DEFAULT_PATHS) > 1 else ""
        assert re.search(prefix + r"in-process stages decode / extract / prepare \(CPU µs/span\)"
                         r"\s+[\d.]+ / [\d.]+ / [\d.]+; all [\d.]+\n", out), out
        assert re.search(prefix + r"grpc: acknowledged missing from store\s+0\n", out), out
    # where the CPU went, by process: each role named, each figure a number, summed as "all"
    for transport in ("grpc", "http"):
        line = re.search(rf"{transport}: CPU per span by process \(µs\)\s+(.+)\n", out)
        assert line, out
        parts, _, total = line.group(1).partition("; all ")
        shares = {who: float(n) for who, n in (p.rsplit(" ", 1) for p in parts.split(", "))}
        assert {"server", "ingest", "load generator"} <= set(shares), line.group(0)
        # "other": a child still importing, before it names itself (the worker, at start)
        assert set(shares) <= {"server", "ingest", "worker", "score", "other",
                               "load generator"}, shares
        assert float(total) == pytest.approx(sum(shares.values()), abs=0.5)


def test_bench_ingest_runs_another_installs_server(tmp_path: Path) -> None:
    """--server-python: the server and its migrations by that interpreter (here this one: the
    wiring, not a second install, is what is tested); the A/B modes refuse it."""
    out = run("ingest", "--database-url", f"sqlite:///{tmp_path}/b.db", "--seconds", "1",
              "--sdk-transports", "--overload-seconds", "0", "--transports", "grpc",
              "--floor-requests", "8", "--floor-rounds", "1", "--spans-per-request", "100",
              "--server-python", sys.executable)
    assert re.search(r"server interpreter\s+" + re.escape(sys.executable) + "\n", out), out
    assert re.search(r"grpc: acknowledged missing from store\s+0\n", out), out
    refused = subprocess.run([sys.executable, "-m", "tooltrail", "bench", "ingest",
                              "--server-python", sys.executable, "--signals-ab", "1"],
                             capture_output=True, text=True, timeout=60, check=False)
    assert refused.returncode == 2, refused.stderr
    assert "--server-python runs the standard phases" in refused.stderr


def test_bench_extract_interleaves_installs_and_walks(tmp_path: Path) -> None:
    """Every (install, walk) once per round, each leg naming the collector it imported; the
    other install (here this interpreter without PYTHONPATH: the wiring, not a second build,
    is what is tested) runs from a directory of its own and extracts the same calls."""
    code = "import tooltrail.collector; print(tooltrail.collector.__file__)"
    other = subprocess.run([sys.executable, "-c", code],
                           capture_output=True, text=True, timeout=60, check=True, cwd=tmp_path,
                           env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    out = run("extract", "--requests", "2", "--passes", "2", "--rounds", "2",
              "--spans-per-request", "100", "--python", sys.executable,
              "--json", str(tmp_path / "x.json"))
    legs = re.findall(r"round (\d), (this install|\S+) (compiled|pure): [\d.]+ µs/span "
                      r"\(passes [\d.]+ / [\d.]+; load .*; (\d+) calls in request 1; (\S+)\)",
                      out)
    walks = [w for w in ("compiled", "pure") if w in DEFAULT_PATHS]
    assert [(n, i, w) for n, i, w, _, _ in legs] == [
        (n, i, w) for n in "12" for i in ("this install", sys.executable) for w in walks], out
    assert {c for _, _, _, c, _ in legs} == {str(len(extract(
        ExportTraceServiceRequest.FromString(RequestFactory(Shape(spans=100)).make()[0]),
        ExtractOptions()).calls))}, out
    assert {f for _, i, _, _, f in legs if i != "this install"} == {other.stdout.strip()}, out
    for walk in walks:
        assert re.search(rf"after / before, this install {walk} / {re.escape(sys.executable)} "
                         rf"{walk}: \d\.\d+ \([+-]\d+\.\d %\)", out), out
    figures = json.loads((tmp_path / "x.json").read_text())
    assert len(figures["legs"]) == len(legs) and len(figures["ratios"]) == len(walks)


def test_bench_extract_leg_skips_a_walk_the_install_lacks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An install without the compiled walk (one from before it, or not built) has no compiled
    leg; its pure leg times every span of the requests."""
    bodies = tmp_path / "bodies"
    factory = RequestFactory(Shape(spans=100))
    bench_extract.write_bodies(bodies, [factory.make()[0] for _ in range(2)])
    monkeypatch.setattr(otlp, "COMPILED_WALK", None)
    assert bench_extract.leg(bodies, "compiled", 1)["walk"] is None
    pure = bench_extract.leg(bodies, "pure", 2)
    assert pure["walk"] == "pure" and pure["spans"] == 2 * factory.span_count
    assert len(pure["passes"]) == 2 and pure["us_per_span"] > 0


def test_bench_ingest_ab_prints_each_leg_and_the_median() -> None:
    """Two comparisons in one run, each leg on a store of its own: signals switch a server
    flag; logs send the tool-call content as log records beside the spans (the same server
    on both sides)."""
    out = run("ingest", "--signals-ab", "1", "--logs-ab", "1", "--seconds", "1",
              "--spans-per-request", "100", "--clients", "2", "--settle-seconds", "0.2")
    for feature in ("signals", "logs"):
        for side in ("off", "on"):
            assert re.search(rf"{feature} {side}, pair 1: spans/s \| CPU µs/span\s+[\d,]+ \| "
                             r"\d+\.\d\n", out), out
        assert re.search(rf"{feature} cost, CPU per span: median\s+[+-]\d+\.\d %", out), out
    assert "not all scored" not in out, out


def test_logs_traffic_gives_the_span_only_trajectory() -> None:
    spans_only = RequestFactory(Shape(spans=100), seed=3)
    mixed = RequestFactory(Shape(spans=100, logs=True), seed=3)
    plain, _ = spans_only.make(1)
    body, _ = mixed.make(1)
    logs = ExportLogsServiceRequest.FromString(mixed.logs(body))
    expected = trajectory([extract(ExportTraceServiceRequest.FromString(plain))])
    bare = extract(ExportTraceServiceRequest.FromString(body))
    moved = trajectory([bare])
    assert moved != expected and all(c[3] is None for t in moved for c in t)  # no result left
    from_logs, records = read_logs(logs, ExtractOptions())
    assert records == mixed.tool_calls and not from_logs.rejected
    assert sum(map(len, expected)) == mixed.tool_calls
    # the same trajectory whichever arrives first
    assert trajectory([bare, from_logs]) == expected == trajectory([from_logs, bare])
    # the logs request is stamped with its traces request's trace ids
    again, _ = mixed.make(2)
    assert {r.trace_id for rl in ExportLogsServiceRequest.FromString(mixed.logs(again))
            .resource_logs for sl in rl.scope_logs for r in sl.log_records} == {
        s.trace_id for rs in ExportTraceServiceRequest.FromString(again).resource_spans
        for ss in rs.scope_spans for s in ss.spans if s.name.startswith("execute_tool")}


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_floor_stores_exactly_the_tool_spans(tmp_path: Path, store: str) -> None:
    url = f"sqlite:///{tmp_path}/floor.db" if store == "sqlite" else new_postgres_database()
    try:
        factory = RequestFactory(Shape(spans=100))
        bodies = [factory.make()[0] for _ in range(3)]
        done = run_floor(url, bodies, factory.span_count, group=2, seconds=60)
    finally:
        if store == "postgresql":
            drop_postgres_database(url)
    assert (done.spans, done.calls) == (3 * factory.span_count, 3 * factory.tool_calls)
    rows = tool_rows(bodies[0])
    assert len(rows) == factory.tool_calls
    names = {row[3] for row in rows}
    assert names <= set(TOOLS) and all(row[5] for row in rows)  # arguments as sent
    assert {row[7] for row in rows} == {"ok", "error"}


def test_traffic_has_the_documented_shape() -> None:
    factory = RequestFactory(Shape())
    assert 490 <= factory.span_count <= 520
    assert 0.3 <= factory.tool_calls / factory.span_count <= 0.4
    request = ExportTraceServiceRequest.FromString(factory.make()[0])
    spans = [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
    turns: dict[str, int] = {}
    llm = 0
    for span in spans:
        attrs = {kv.key: kv.value.string_value for kv in span.attributes}
        if attrs.get("gen_ai.operation.name") == "invoke_agent":
            key = attrs["gen_ai.conversation.id"]
            turns[key] = turns.get(key, 0) + 1
        if attrs.get("openinference.span.kind") == "LLM":
            llm += 1
            assert attrs["gen_ai.operation.name"] == "chat"
            assert len(attrs["gen_ai.input.messages"]) > 300
            assert "tool_call" in attrs["gen_ai.output.messages"]
            assert attrs["llm.input_messages.0.message.role"] == "system"
    assert llm == factory.turns == sum(turns.values())
    assert set(turns.values()) == {3, 4, 5, 6} and len(turns) == factory.conversations


def test_memory_sampler_keeps_peaks_and_reads_pss_less_often(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """RSS every sample, PSS (a page-table walk by the kernel, on the cores the server under
    test shares) every `pss_every` samples; both peaks see memory this process holds."""
    import os
    import time

    from tooltrail.collector.bench import memory

    me = os.getpid()
    reads = {"rss": 0, "pss": 0}

    def counting(kind: str, real: Any) -> Any:
        def read(pid: int) -> int:
            if pid == me:
                reads[kind] += 1
            return int(real(pid))
        return read

    monkeypatch.setattr(memory, "rss_bytes", counting("rss", memory.rss_bytes))
    monkeypatch.setattr(memory, "pss_bytes", counting("pss", memory.pss_bytes))
    held = bytearray(64 * 1024 * 1024)
    held[::4096] = b"\x01" * len(held[::4096])  # touched: resident
    sampler = memory.MemorySampler(me, interval=0.01, pss_every=5).start()
    deadline = time.monotonic() + 10
    while reads["rss"] < 20 and time.monotonic() < deadline:
        time.sleep(0.05)
    sampler.stop()
    samples, pss = reads["rss"], reads["pss"]
    assert samples >= 20
    assert 5 * (pss - 1) < samples <= 5 * pss + 1, reads  # PSS at samples 0, 5, 10, …
    assert sampler.peak_total >= sampler.peak_main >= len(held)
    assert len(held) <= sampler.peak_pss <= sampler.peak_total


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_bench_soak_prints_each_minute_and_the_verdict(store: str) -> None:
    done = subprocess.run([sys.executable, "-m", "tooltrail", "bench", "soak", "--store",
                           store, "--minutes", "3", "--minute-seconds", "1", "--clients", "2"],
                          capture_output=True, text=True, timeout=240, check=False)
    out = done.stdout
    steady = "steady: yes" in out  # exit 1: not steady (1-second minutes on a busy machine)
    assert done.returncode == (0 if steady else 1), done.stderr[-3000:]
    minutes = [line for line in out.splitlines() if line.startswith("minute ")]
    assert len(minutes) == 3, out
    assert all("spans/s" in line and "commit p99" in line and "database" in line
               for line in minutes), out
    assert "steady:" in out.splitlines()[-1]
