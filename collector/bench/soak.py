"""`tooltrail bench soak`: steady OTLP load on a real server with readers active (REST list and
detail, web view pages), one line per minute: ingest rate, commit p99, WAL and database size,
the CPU seconds the server, its ingest children, its worker and this bench process used, and
the readers' requests and their mean latency; at the end, whether the last minute's rate stays
within 10 % of the second minute's. Each minute's clients send the conversations of the minute
before again, a later turn of each (their conversation groups start over every minute), so the
stored conversations grow through the run as long-lived sessions do, and everything that reads
or rewrites a conversation's history is measured growing with it."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import re
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import httpx
from sqlalchemy import text

from tooltrail.collector.bench.ingest import drive
from tooltrail.collector.bench.memory import cpu_by_process, cpu_by_role
from tooltrail.collector.bench.process import ServerProcess, serve
from tooltrail.collector.bench.scoring import drop_database, temp_database
from tooltrail.collector.bench.traffic import RequestFactory
from tooltrail.collector.clihelp import HelpFormatter, Parser
from tooltrail.collector.store.db import make_engine, wal_file_bytes

logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per poll otherwise
POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"
BUCKET = re.compile(r'^tooltrail_writer_commit_seconds_bucket\{le="([^"]+)"\} (\S+)$', re.M)


def commit_buckets(server: ServerProcess) -> dict[float, float]:
    """The server's cumulative commit-time histogram: upper bound → count."""
    body = httpx.get(f"{server.base_url}/metrics", timeout=30).text
    return {float(le): float(n) for le, n in BUCKET.findall(body)}


def p99(before: dict[float, float], after: dict[float, float]) -> float:
    """The 99th percentile's bucket bound of the commits between two scrapes."""
    counts = sorted((le, after[le] - before.get(le, 0.0)) for le in after)
    total = counts[-1][1] if counts else 0.0
    for le, n in counts:
        if total and n >= 0.99 * total:
            return le
    return 0.0


@dataclass
class Reads:
    """The readers' requests so far and the seconds they took (read and reset each minute)."""

    requests: int = 0
    seconds: float = 0.0

    def take(self) -> tuple[int, float]:
        """(requests, mean seconds) since the last take."""
        n, spent = self.requests, self.seconds
        self.requests, self.seconds = 0, 0.0
        return n, spent / n if n else 0.0


def readers(server: ServerProcess, stop: threading.Event, reads: Reads) -> None:
    """Poll the REST list, a conversation's detail and the web view until `stop`."""
    with httpx.Client(base_url=server.base_url, timeout=30) as client:

        def get(path: str, **params: int) -> httpx.Response:
            started = time.perf_counter()
            answer = client.get(path, params=params)
            reads.requests += 1
            reads.seconds += time.perf_counter() - started
            return answer

        while not stop.is_set():
            listed = get("/api/v1/conversations", limit=20)
            items = listed.json().get("data", []) if listed.status_code == 200 else []
            if items:
                get(f"/api/v1/conversations/{quote(items[0]['key'], safe='')}")
            get("/ui/")
            stop.wait(0.05)


def cpu_line(used: dict[str, float]) -> str:
    """CPU seconds by role, the server's own first, then its children, then this process."""
    order = ["server", "ingest", "worker", *sorted(set(used) - {"server", "ingest", "worker",
                                                                 "bench"}), "bench"]
    return ", ".join(f"{role} {used[role]:.1f}" for role in order if role in used)


def sizes(url: str) -> tuple[int, int]:
    """(WAL bytes, database bytes); PostgreSQL: (0, pg_database_size)."""
    if url.startswith("sqlite"):
        path = url.removeprefix("sqlite:///")
        return wal_file_bytes(path), os.stat(path).st_size
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return 0, int(conn.execute(text("SELECT pg_database_size(current_database())"))
                          .scalar() or 0)
    finally:
        engine.dispose()


def soak(url: str, args: argparse.Namespace) -> bool:
    flags = [f"--sqlite-wal-restart-bytes={args.wal_restart_bytes}"] if (
        args.wal_restart_bytes is not None) else []
    factory = RequestFactory()
    rates: list[float] = []
    with serve(url, *flags) as server:
        stop = threading.Event()
        reads = Reads()
        polling = threading.Thread(target=readers, args=(server, stop, reads), daemon=True)
        polling.start()
        left = args.max_requests
        try:
            for minute in range(1, args.minutes + 1):
                before = commit_buckets(server)
                cpu, own = cpu_by_process(server.process.pid), time.process_time()
                reads.take()
                stats = asyncio.run(drive(server, "http", args.clients, factory,
                                          args.minute_seconds, max_requests=max(1, left)))
                used = cpu_by_role(cpu_by_process(server.process.pid), cpu)
                used["bench"] = time.process_time() - own
                served, latency = reads.take()
                left -= stats.acked_requests
                wal, db = sizes(url)
                rates.append(stats.spans_per_second)
                print(f"minute {minute}: {stats.spans_per_second:,.0f} spans/s, commit p99 "
                      f"<= {p99(before, commit_buckets(server)):.3f} s, WAL "
                      f"{wal / 1e6:,.1f} MB, database {db / 1e6:,.1f} MB; CPU s: "
                      f"{cpu_line(used)}; reads {served} (mean {latency * 1e3:.0f} ms); "
                      f"load {os.getloadavg()[0]:.1f}", flush=True)
                if left <= 0:
                    break
        finally:
            stop.set()
            polling.join(30)
    if len(rates) < 2:
        print("steady: not judged (fewer than two minutes)")
        return True
    ratio = rates[-1] / rates[1] if rates[1] else 0.0
    steady = ratio >= 0.9
    print(f"steady: {'yes' if steady else 'NO'} (last minute {ratio:.0%} of the second's)")
    return steady


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="tooltrail bench soak", description=__doc__, formatter_class=HelpFormatter)
    p.add_argument("--store", choices=("sqlite", "postgresql"), default="sqlite")
    p.add_argument("--postgres-url", default=POSTGRES,
                   help="admin URL; the soak runs on a fresh database beside it")
    p.add_argument("--minutes", type=int, default=10)
    p.add_argument("--max-requests", type=int, default=1_000_000)
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--wal-restart-bytes", type=int, default=None,
                   help="the server's sqlite_wal_restart_bytes (0: the WAL is never restarted)")
    p.add_argument("--minute-seconds", type=float, default=60.0, help=argparse.SUPPRESS)
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    if args.store == "sqlite":
        with tempfile.TemporaryDirectory() as tmp:
            return 0 if soak(f"sqlite:///{Path(tmp) / 'soak.db'}", args) else 1
    url = temp_database(args.postgres_url)
    try:
        return 0 if soak(url, args) else 1
    finally:
        drop_database(args.postgres_url, url)


