"""`tooltrail bench ui`: server time of every page of the web view with many conversations stored.

Seeds N conversations (the real writer path, collector/bench/seed.py), half of them of
`service.version` v1 and half v2 as the same scenarios, with their production signals
(`collector.production.signals.record`, as the worker records them), and one conversation of
200 calls; then, over OTLP to the real server, one conversation of the benchmark traffic
(collector/bench/traffic.py: 80 turns, 200 calls, messages on the spans, so archived with
content) and the same without message content. Three expectations are scored by the server's
worker (the 200-call ones and the newest stored), then every page under /ui/ is timed over
loopback — the list, plain, by each filter (those matching nothing read every row) and page
2; each conversation page (not archived, with content, without); golden pin previews; the
expectation pages; compare, signals, errors, jobs, sign-in — on SQLite and PostgreSQL.
Prints p50/p95 per page and store, and marks those over the 300 ms target.
"""

from __future__ import annotations

import logging
import random
import statistics
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from sqlalchemy import select, text

from tooltrail.collector.bench.process import serve
from tooltrail.collector.bench.scoring import drop_database, temp_database
from tooltrail.collector.bench.seed import conversation_batch, seed
from tooltrail.collector.bench.traffic import RequestFactory, Shape
from tooltrail.collector.clihelp import HelpFormatter, Parser
from tooltrail.collector.production import signals
from tooltrail.collector.store import leases, maintenance
from tooltrail.collector.store.db import make_engine, migrate
from tooltrail.collector.store.persist import write_batches
from tooltrail.collector.store.tables import conversations

BIG = 200
VERSIONS = ("v1", "v2")
SERVICE = "bench-agent"
TRAFFIC = Shape(spans=1, conversation_turns=(80,))  # one conversation: 80 turns, 200 calls
TARGET_MS = 300.0
CONTENT = ("gen_ai.input.messages", "gen_ai.output.messages", "input.value", "output.value")


def expectations(count: int) -> list[dict[str, object]]:
    newest = (count // len(VERSIONS) - 1) // 100  # the last 100 scenarios: 200 conversations
    return [
        {"id": "ui-bench-big", "selector": {"conversation": "big-*"}, "match": "in_order",
         "calls": [{"name": "lookup_order"}, {"name": "issue_refund", "arguments": {"n": -1}}],
         "forbid": ["delete_*"]},
        {"id": "ui-bench-newest", "selector": {"conversation": f"conv-{newest:05d}??@*"},
         "calls": [{"name": "lookup_order"}]},
        {"id": "ui-bench-content", "selector": {"service": "support-agent"}, "match": "superset",
         "calls": [{"name": "search_orders"}, {"name": "issue_refund"}]},
    ]  # fmt: skip


def prepare(url: str, count: int, calls: int) -> str:
    """Seed, with production signals; returns the key of the 200-call conversation."""
    migrate(url)
    engine = make_engine(url)
    took = seed(engine, count, calls, versions=VERSIONS)
    big = conversation_batch(count, BIG, random.Random(1), "big-")
    with engine.begin() as conn:
        write_batches(conn, [big], time.time())
    started = time.perf_counter()
    with engine.connect() as conn:
        ids = [i for (i,) in conn.execute(select(conversations.c.id).order_by(conversations.c.id))]
    for at in range(0, len(ids), 500):
        with engine.begin() as conn:
            signals.record(conn, leases.conversation_facts(conn, ids[at:at + 500]))
    with engine.begin() as conn:
        conn.execute(text("UPDATE conversations SET scored_seq = change_seq"))  # settled
    with engine.begin() as conn:  # the statistics a worker's maintenance round would gather
        maintenance.refresh_statistics(conn)
    engine.dispose()
    print(f"  stored {count:,} conversations of {calls} calls ({' and '.join(VERSIONS)}) in "
          f"{took:.1f} s, their signals in {time.perf_counter() - started:.1f} s, and one of "
          f"{BIG}", flush=True)
    return big.traces[0].conversation_key


def without_content(body: bytes) -> bytes:
    """The request with the messages taken off its spans (as with content capture off)."""
    request = ExportTraceServiceRequest.FromString(body)
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                kept = [a for a in span.attributes if a.key not in CONTENT
                        and not (a.key.startswith("llm.") and "_messages." in a.key)]
                del span.attributes[:]
                span.attributes.extend(kept)
    return request.SerializeToString()


def send_traffic(client: httpx.Client) -> tuple[str, str]:
    """Export the conversation with content and the one without; their keys."""
    factory = RequestFactory(TRAFFIC, seed=11)
    with_content, _ = factory.make(1)
    plain, _ = factory.make(2)
    for body in (with_content, without_content(plain)):
        client.post("/v1/traces", content=body,
                    headers={"content-type": "application/x-protobuf"}).raise_for_status()
    return factory.conversation_keys(1)[0], factory.conversation_keys(2)[0]


def wait_scored(client: httpx.Client, keys: list[str], deadline: float) -> None:
    for key in keys:
        while time.monotonic() < deadline:
            answer = client.get(f"/api/v1/conversations/{quote(key, safe='')}/results")
            if answer.status_code == 200 and answer.json()["data"]:
                break
            time.sleep(0.2)
        else:
            raise SystemExit(f"{key} was not scored in time")


def timed(client: httpx.Client, path: str, runs: int) -> tuple[float, float]:
    client.get(path).raise_for_status()  # warm
    took = []
    for _ in range(runs):
        started = time.perf_counter()
        client.get(path).raise_for_status()
        took.append((time.perf_counter() - started) * 1000)
    took.sort()
    return statistics.median(took), took[min(len(took) - 1, int(len(took) * 0.95))]


def next_page(client: httpx.Client, path: str) -> str:
    """The address of the second page (the first page's "older" link)."""
    body = client.get(path).text
    end = body.index('" rel="next">older')
    return body[body.rindex('href="', 0, end) + len('href="'):end].replace("&amp;", "&")


def pages(big: str, content: str, plain: str) -> dict[str, str]:
    """Label → address of every page timed."""
    c = f"/ui/conversations/{quote(content, safe='')}"
    return {
        "list: newest 50": "/ui/",
        "list: ?passed=false": "/ui/?passed=false",
        "list: ?expectation= (failing)": "/ui/?expectation=ui-bench-big&passed=false",
        "list: ?reason= (no match)": "/ui/?reason=no-such-reason",
        "list: ?tool= page 2": "/ui/?tool=search_kb",
        "list: ?tool= (no match)": "/ui/?tool=no_such_tool",
        "list: ?q= (no match)": "/ui/?q=no-such-key",
        "list: ?has_errors=true (no match)": "/ui/?has_errors=true",
        "list: ?agent= (no match)": "/ui/?agent=nobody",
        "list: ?service= (no match)": "/ui/?service=nobody",
        "list: ?since= (no match)": "/ui/?since=2100-01-01T00:00:00Z",
        f"conversation: {BIG} calls, not archived": f"/ui/conversations/{big}",
        f"conversation: {BIG} calls, 80 turns, content": c,
        f"conversation: {BIG} calls, 80 turns, no content":
            f"/ui/conversations/{quote(plain, safe='')}",
        f"golden preview: {BIG} calls": f"/ui/golden?key={big}",
        f"golden preview: {BIG} calls, content": f"/ui/golden?key={quote(content, safe='')}",
        "expectations": "/ui/expectations",
        "expectation: ui-bench-big": "/ui/expectations/ui-bench-big",
        "expectation: ui-bench-newest, hourly": "/ui/expectations/ui-bench-newest?bucket=1h",
        "compare: v1 / v2, 50 pairs":
            f"/ui/compare?service={SERVICE}&baseline={VERSIONS[0]}&candidate={VERSIONS[1]}",
        "compare: v1 / a version with no turns":
            f"/ui/compare?service={SERVICE}&baseline={VERSIONS[0]}&candidate=v0",
        "signals": f"/ui/signals?service={SERVICE}",
        "errors": "/ui/errors",
        "jobs": "/ui/jobs",
        "signin": "/ui/signin",
    }


def run(url: str, store: str, count: int, calls: int, runs: int,
        timeout: float) -> dict[str, tuple[float, float]]:
    print(f"{store}:", flush=True)
    big = prepare(url, count, calls)
    out: dict[str, tuple[float, float]] = {}
    with serve(url, "--settle-seconds", "0.2", "--worker-poll-seconds", "0.2") as server:
        base = f"http://127.0.0.1:{server.http_port}"
        with httpx.Client(base_url=base, timeout=60) as client:
            for exp in expectations(count):
                client.post("/api/v1/expectations", json=exp).raise_for_status()
            content, plain = send_traffic(client)
            wait_scored(client, [big, content, plain], time.monotonic() + timeout)
            for label, path in pages(big, content, plain).items():
                if label.endswith("page 2"):
                    path = next_page(client, path)
                p50, p95 = out[label] = timed(client, path, runs)
                verdict = "ok" if p95 <= TARGET_MS else f"OVER the {TARGET_MS:.0f} ms target"
                print(f"  {label}: p50 {p50:.1f} ms, p95 {p95:.1f} ms ({verdict})", flush=True)
    return out


def table(figures: dict[str, dict[str, tuple[float, float]]], runs: int) -> None:
    """Every page's p50 / p95 per store, one line each."""
    stores = list(figures)
    labels = list(next(iter(figures.values()))) if figures else []
    width = max((len(label) for label in labels), default=4)
    print(f"\np50 / p95 ms of {runs} requests each (target: p95 <= {TARGET_MS:.0f} ms)")
    print(f"{'page':<{width}}  " + "  ".join(f"{s:>17}" for s in stores))
    for label in labels:
        cells = []
        for s in stores:
            p50, p95 = figures[s][label]
            cells.append(f"{p50:7.1f} / {p95:6.1f}{'!' if p95 > TARGET_MS else ' '}")
        print(f"{label:<{width}}  " + "  ".join(cells))


def main(argv: list[str] | None = None) -> int:
    parser = Parser(
        prog="tooltrail bench ui",
        description=__doc__,
        formatter_class=HelpFormatter,
    )
    parser.add_argument(
        "--admin-url",
        default="postgresql+psycopg://postgres@127.0.0.1:5432/test",
        help="server on which a temporary database is created (and dropped after)",
    )
    parser.add_argument("--stores", default="sqlite,postgresql")
    parser.add_argument("--conversations", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=3, help="calls per seeded conversation")
    parser.add_argument("--runs", type=int, default=40, help="requests timed per page")
    parser.add_argument("--timeout", type=float, default=300.0, help="to score, per store")
    args = parser.parse_args(argv)
    if args.conversations < 2 * len(VERSIONS):
        parser.error("--conversations: at least 4")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request otherwise
    figures: dict[str, dict[str, tuple[float, float]]] = {}
    for store in args.stores.split(","):
        if store == "sqlite":
            with tempfile.TemporaryDirectory() as folder:
                url = f"sqlite:///{Path(folder) / 'bench.db'}"
                figures[store] = run(url, store, args.conversations, args.calls, args.runs,
                                     args.timeout)
        elif store == "postgresql":
            url = temp_database(args.admin_url)
            try:
                figures[store] = run(url, store, args.conversations, args.calls, args.runs,
                                     args.timeout)
            finally:
                drop_database(args.admin_url, url)
        else:
            parser.error(f"--stores: sqlite or postgresql, not {store!r}")
    table(figures, args.runs)
    return 0
