"""tooltrail's own observability: the metrics of a real server and a real standalone worker,
their health endpoints, one log format for tooltrail and uvicorn, the worker's backoff while the
database is unreachable, and migrations that several replicas may start at once."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import fresh_database
from tests.server import FAST, Server, running_server
from tests.spans import ToolStep, agent_turn, capture, provider, to_request
from tooltrail.collector.bench.process import _stop
from tooltrail.collector.errors import Overloaded
from tooltrail.collector.extract import ExtractOptions
from tooltrail.collector.ingest import Ingest, Offload, Pipeline
from tooltrail.collector.memory_sink import MemorySink
from tooltrail.collector.metrics import Metrics
from tooltrail.collector.receivers.codec import decode_body
from tooltrail.collector.store.db import at_head, make_engine
from tooltrail.collector.store.rows import prepare
from tooltrail.collector.worker import MAX_BACKOFF, Worker

EXPECTATION = {"id": "obs", "selector": {"conversation": "obs-*"}, "match": "subset",
               "calls": [{"name": "lookup"}]}
WORKER_HTTP = re.compile(r"tooltrail worker health and metrics: http=127\.0\.0\.1:(\d+)")


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of a Prometheus text page, by name and labels."""
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(text: str, name: str, **labels: str) -> float:
    return samples(text).get((name, frozenset(labels.items())), 0.0)


def scrape_until(base_url: str, name: str, wanted: float, timeout: float = 10) -> str:
    """/metrics once `name` reaches `wanted` (the embedded worker relays its counts each
    second), or the last page."""
    deadline = time.monotonic() + timeout
    while True:
        text = httpx.get(f"{base_url}/metrics").text
        if value(text, name) >= wanted or time.monotonic() > deadline:
            return text
        time.sleep(0.1)


def send_turns(server: Server, keys: list[str]) -> int:
    """One agent turn per key through the SDK's OTLP/HTTP exporter; returns spans sent."""
    tp = provider(OTLPSpanExporter(endpoint=f"{server.base_url}/v1/traces"))
    for key in keys:
        agent_turn(tp, key, [ToolStep("lookup", {"id": key}, 1)])
    tp.shutdown()
    return 3 * len(keys)  # invoke_agent, chat, execute_tool


def test_server_metrics(database_url: str) -> None:
    with running_server(database_url, "--max-queue-bytes", "4000000") as server:
        with server.client() as client:
            assert client.post("/api/v1/expectations", json=EXPECTATION).status_code == 201
        sent = send_turns(server, ["obs-1", "obs-2"])
        invalid = {"resourceSpans": [{"scopeSpans": [{"spans": [
            {"traceId": "00" * 16, "spanId": "01" * 8, "name": "bad"}]}]}]}
        assert httpx.post(f"{server.base_url}/v1/traces", json=invalid).status_code == 200
        server.wait_for("/api/v1/results", lambda b: len(b["data"]) == 2,
                        params={"expectation": "obs"})
        text = scrape_until(server.base_url, "tooltrail_scoring_delay_seconds_count", 2)
    assert value(text, "tooltrail_receiver_accepted_spans_total", transport="http") == sent
    assert value(text, "tooltrail_receiver_refused_spans_total",
                 transport="http", reason="invalid") == 1
    assert value(text, "tooltrail_writer_queue_capacity_bytes") == 4_000_000
    assert value(text, "tooltrail_scoring_delay_seconds_count") == 2  # relayed by the child
    assert value(text, "tooltrail_scoring_backlog_conversations") == 0
    assert value(text, "tooltrail_results_total", passed="true") == 2
    assert any(name == "tooltrail_build_info" and v == 1 for (name, _), v in samples(text).items())
    assert "process_resident_memory_bytes" in text and "python_gc_objects_collected_total" in text
    assert "_created" not in text
    for old in ("tooltrail_ingest_spans_total", "tooltrail_ingest_rejected_spans_total"):
        assert old not in text


@contextmanager
def worker_process(database_url: str, *flags: str) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """A `tooltrail worker` with its HTTP endpoint on a free port; yields it and the port."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tooltrail", "worker", "--database-url", database_url,
         "--host", "127.0.0.1", "--worker-http-port", "0", *FAST, *flags],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert process.stderr is not None
        deadline = time.monotonic() + 30
        port = 0
        lines = []
        while not port and time.monotonic() < deadline:
            line = process.stderr.readline()
            lines.append(line)
            match = WORKER_HTTP.search(line)
            port = int(match.group(1)) if match else 0
            assert line or process.poll() is None, "".join(lines)
        assert port, "".join(lines)
        yield process, port
    finally:
        _stop(process)
        if process.stderr is not None:
            process.stderr.close()


def test_standalone_worker_serves_health_and_metrics(database_url: str) -> None:
    with running_server(database_url, "--no-worker") as server:
        with server.client() as client:
            assert client.post("/api/v1/expectations", json=EXPECTATION).status_code == 201
        send_turns(server, ["obs-w"])
        with worker_process(database_url) as (_, port):
            base = f"http://127.0.0.1:{port}"
            assert httpx.get(f"{base}/healthz").json() == {"status": "ok"}
            assert httpx.get(f"{base}/readyz").json() == {"status": "ready"}
            server.wait_for("/api/v1/results", lambda b: len(b["data"]) == 1,
                            params={"expectation": "obs"})
            text = scrape_until(base, "tooltrail_scoring_delay_seconds_count", 1)
            assert value(text, "tooltrail_results_total", passed="true") == 1
            assert value(text, "tooltrail_scoring_delay_seconds_count") == 1
            assert value(text, "tooltrail_scoring_backlog_conversations") == 0
            assert "tooltrail_build_info" in text and "process_cpu_seconds_total" in text
            assert "_created" not in text
            assert httpx.get(f"{base}/nothing").status_code == 404


def test_worker_readyz_says_unmigrated(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    with worker_process(url) as (_, port):
        answer = httpx.get(f"http://127.0.0.1:{port}/readyz")
        assert answer.status_code == 503 and "run migrate" in answer.text


def test_json_logs_cover_uvicorn_and_probes_are_quiet(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'logs.db'}"
    with running_server(url, "--log-format", "json") as server:
        for _ in range(5):
            assert httpx.get(f"{server.base_url}/readyz").status_code == 200
        time.sleep(0.5)
        lines = [line for line in server.log if line.strip()]
        before = len(lines)
        entries = [json.loads(line) for line in lines]  # every line is one JSON object
    assert {"time", "level", "logger", "message"} <= set(entries[0])
    assert any(e["logger"] == "uvicorn.error" for e in entries)  # uvicorn in the same format
    assert any(e["message"].startswith("tooltrail listening") for e in entries)
    assert not any("readyz" in e["message"] for e in entries[:before])


def test_worker_backs_off_with_jitter_while_the_database_is_unreachable(
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine = make_engine("postgresql://postgres@127.0.0.1:1/none")  # nothing listens on port 1
    worker = Worker(engine, Metrics(), settle_seconds=0, poll_seconds=0.25, batch=8,
                    lease_seconds=5)
    assert worker.pause == 0.25
    bounds = []
    with caplog.at_level(logging.INFO, logger="tooltrail.collector.worker"):
        for _ in range(8):
            assert worker.safe_round() == 0
            pauses = [worker.pause for _ in range(50)]
            bounds.append(max(pauses))
            assert min(pauses) >= worker._backoff / 2
            assert len(set(pauses)) > 1  # jitter
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "unreachable" in errors[0].getMessage()
    assert errors[0].exc_info is None  # said once, without a traceback per round
    assert bounds[0] <= 0.5 and MAX_BACKOFF / 2 <= bounds[-1] <= MAX_BACKOFF
    assert bounds == sorted(bounds) or max(bounds) <= MAX_BACKOFF
    engine.dispose()


def test_replicas_migrating_at_once_all_succeed(tmp_path: Path) -> None:
    for url in fresh_database("postgres", tmp_path):
        command = [sys.executable, "-m", "tooltrail", "migrate", "--database-url", url]
        processes = [subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True) for _ in range(4)]
        said = [p.communicate(timeout=120)[1] for p in processes]
        assert [p.returncode for p in processes] == [0, 0, 0, 0], said
        engine = make_engine(url)
        assert at_head(engine)
        engine.dispose()


def test_spans_of_a_request_the_store_refuses_are_counted_refused() -> None:
    """A decoded request whose write is refused (here: a retryable overload) counts its spans
    in refused_spans with that reason, none as accepted."""
    metrics = Metrics()
    sink = MemorySink(fail_write=Overloaded("the writer is not running", retry_after=1.0))
    pipeline = Pipeline(decode=decode_body, prepare=prepare, options=ExtractOptions(),
                        limit=10**7)
    ingest = Ingest(sink, metrics, Offload(pipeline, 0, 10**7, metrics))
    tp, memory = capture()
    agent_turn(tp, "obs-refused", [ToolStep("lookup", {}, 1)])
    body = to_request(memory.get_finished_spans()).SerializeToString()

    async def scenario() -> None:
        ticket = ingest.admit(len(body))
        with pytest.raises(Overloaded):
            await ingest.export(body, "application/x-protobuf", None, "grpc", ticket)

    asyncio.run(scenario())
    assert sink.batches == []
    get = metrics.registry.get_sample_value
    assert get("tooltrail_receiver_refused_spans_total",
               {"transport": "grpc", "reason": "overloaded"}) == 3
    assert get("tooltrail_receiver_accepted_spans_total", {"transport": "grpc"}) is None


def test_worker_http_port_in_use_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "tooltrail", "worker", "--database-url",
             f"sqlite:///{tmp_path / 'w.db'}", "--host", "127.0.0.1",
             "--worker-http-port", str(port)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "--worker-http-port" in done.stderr and "Traceback" not in done.stderr
