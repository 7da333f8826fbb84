"""`tooltrail bench ui`: server time of the web view's pages with many conversations stored.

Seeds N conversations (the real writer path, collector/bench/seed.py) and one conversation
of 200 calls, scores the latter and the newest ones with two expectations through the real
server's worker, then times GET /ui/ (plain and filtered), the 200-call conversation page and
the expectation page over loopback, on SQLite and PostgreSQL. Prints p50/p95 per page.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from pathlib import Path

import httpx
from sqlalchemy import text

from tooltrail.collector.bench.process import serve
from tooltrail.collector.bench.scoring import drop_database, temp_database
from tooltrail.collector.bench.seed import conversation_batch, seed
from tooltrail.collector.clihelp import HelpFormatter, Parser
from tooltrail.collector.store.db import make_engine, migrate
from tooltrail.collector.store.persist import write_batches

BIG = 200
EXPECTATIONS = [
    {"id": "ui-bench-big", "selector": {"conversation": "big-*"}, "match": "in_order",
     "calls": [{"name": "lookup_order"}, {"name": "issue_refund", "arguments": {"n": -1}}],
     "forbid": ["delete_*"]},
    {"id": "ui-bench-newest", "selector": {"conversation": "conv-00999*"},
     "calls": [{"name": "lookup_order"}]},
]  # fmt: skip


def prepare(url: str, count: int, calls: int) -> str:
    """Seed; returns the key of the 200-call conversation."""
    migrate(url)
    engine = make_engine(url)
    took = seed(engine, count, calls)
    big = conversation_batch(count, BIG, random.Random(1), "big-")
    with engine.begin() as conn:
        write_batches(conn, [big], time.time())
        conn.execute(text("UPDATE conversations SET scored_seq = change_seq"))  # settled
    engine.dispose()
    print(f"  stored {count:,} conversations of {calls} calls in {took:.1f} s, and one of {BIG}")
    return big.traces[0].conversation_key


def timed(client: httpx.Client, path: str, runs: int) -> tuple[float, float]:
    client.get(path).raise_for_status()  # warm
    took = []
    for _ in range(runs):
        started = time.perf_counter()
        client.get(path).raise_for_status()
        took.append((time.perf_counter() - started) * 1000)
    took.sort()
    return statistics.median(took), took[min(len(took) - 1, int(len(took) * 0.95))]


def run(url: str, store: str, count: int, calls: int, runs: int, timeout: float) -> None:
    print(f"{store}:")
    key = prepare(url, count, calls)
    with serve(url, "--settle-seconds", "0.2", "--worker-poll-seconds", "0.2") as server:
        base = f"http://127.0.0.1:{server.http_port}"
        with httpx.Client(base_url=base, timeout=60) as client:
            for exp in EXPECTATIONS:
                client.post("/api/v1/expectations", json=exp).raise_for_status()
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                done = client.get(f"/api/v1/conversations/{key}/results").json()["data"]
                if done:
                    break
                time.sleep(0.2)
            else:
                raise SystemExit(f"the 200-call conversation was not scored in {timeout} s")
            pages = {
                "/ui/ (newest 50)": "/ui/",
                "/ui/?passed=false": "/ui/?passed=false",
                "/ui/?tool=search_kb&cursor (page 2)": "/ui/?tool=search_kb",
                "/ui/?q=no-such-key (no match: reads every row)": "/ui/?q=no-such-key",
                "/ui/?has_errors=true (no match)": "/ui/?has_errors=true",
                f"/ui/conversations/{key} ({BIG} calls)": f"/ui/conversations/{key}",
                "/ui/expectations/ui-bench-big": "/ui/expectations/ui-bench-big",
                f"/ui/golden?key={key}": f"/ui/golden?key={key}",
                "/ui/compare (two versions)": "/ui/compare?service=bench&baseline=1&candidate=2",
            }
            for label, path in pages.items():
                if "page 2" in label:  # follow the first page's cursor
                    body = client.get(path).text
                    marker = 'href="/ui/?tool=search_kb&amp;cursor='
                    start = body.index(marker) + len('href="')
                    path = body[start : body.index('"', start)].replace("&amp;", "&")
                p50, p95 = timed(client, path, runs)
                verdict = "ok" if p95 <= 300 else "OVER the 300 ms target"
                print(f"  {label}: p50 {p50:.1f} ms, p95 {p95:.1f} ms ({verdict})")


def main(argv: list[str] | None = None) -> int:
    parser = Parser(
        prog="tooltrail bench ui",
        description=__doc__,
        formatter_class=HelpFormatter,
    )
    parser.add_argument(
        "--admin-url",
        default="postgresql+psycopg://postgres@127.0.0.1:5432/test",
        help="server on which a temporary database is created",
    )
    parser.add_argument("--stores", default="sqlite,postgresql")
    parser.add_argument("--conversations", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=3, help="calls per seeded conversation")
    parser.add_argument("--runs", type=int, default=40, help="requests timed per page")
    parser.add_argument("--timeout", type=float, default=300.0, help="to score, per store")
    args = parser.parse_args(argv)
    for store in args.stores.split(","):
        if store == "sqlite":
            with tempfile.TemporaryDirectory() as folder:
                url = f"sqlite:///{Path(folder) / 'bench.db'}"
                run(url, store, args.conversations, args.calls, args.runs, args.timeout)
        else:
            url = temp_database(args.admin_url)
            try:
                run(url, store, args.conversations, args.calls, args.runs, args.timeout)
            finally:
                drop_database(args.admin_url, url)
    return 0
