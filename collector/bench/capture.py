"""`tooltrail bench capture`: explicit tool calls over REST, committed calls/s per store.

A real `tooltrail serve` (no worker: this measures capture, not scoring) gets explicit
captures of `--calls` calls each (`POST /api/v1/conversations/{key}/turns/{i}/calls`, each
answered after its commit) from `--clients` concurrent clients, until `--batches` batches were
acknowledged or `--seconds` passed. Reported per store: committed calls/s (acknowledged calls /
wall time), batches/s, ack latency p50/p99, and the stored row count checked against the
acknowledged calls. Stores: a temporary SQLite file, and a temporary database on the
PostgreSQL server of `--pg-admin` (dropped afterwards), unless `--stores` says otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import func, select

from tooltrail.collector.bench.process import serve
from tooltrail.collector.bench.scoring import drop_database, temp_database
from tooltrail.collector.clihelp import HelpFormatter, Parser
from tooltrail.collector.store.db import make_engine
from tooltrail.collector.store.tables import tool_calls

PG_ADMIN = os.environ.get("TOOLTRAIL_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


@dataclass
class Figures:
    """One store's run."""

    store: str
    batches: int
    calls: int
    seconds: float
    calls_per_second: float
    batches_per_second: float
    ack_p50_ms: float
    ack_p99_ms: float
    stored_rows: int


def body(batch: int, calls: int) -> bytes:
    """One explicit capture: `calls` distinct calls, as an agent's tool calls look."""
    return json.dumps({"agent": "bench", "calls": [
        {"id": f"b{batch}-c{i}", "name": ("lookup_order", "search", "issue_refund")[i % 3],
         "arguments": {"order_id": i, "batch": batch, "query": f"customer {i % 97}"},
         "result": f"ok {i}"}
        for i in range(calls)
    ]}).encode()


async def load(base_url: str, args: argparse.Namespace,
               prefix: str) -> tuple[int, float, list[float]]:
    """(acknowledged batches, seconds, ack latencies)."""
    latencies: list[float] = []
    next_batch = 0
    deadline = time.monotonic() + args.seconds
    bodies = [body(b, args.calls) for b in range(min(args.batches, 8))]

    async def client() -> None:
        nonlocal next_batch
        async with httpx.AsyncClient(base_url=base_url, timeout=60) as http:
            while next_batch < args.batches and time.monotonic() < deadline:
                batch = next_batch
                next_batch += 1
                # a fresh conversation per batch; bodies repeat, their keys never do
                path = f"/api/v1/conversations/{prefix}-{batch}/turns/0/calls"
                sent = time.perf_counter()
                answer = await http.post(path, content=bodies[batch % len(bodies)],
                                         headers={"content-type": "application/json"})
                if answer.status_code == 503:  # backpressure: retry the same batch later
                    await asyncio.sleep(float(answer.headers.get("retry-after", "1")))
                    continue
                answer.raise_for_status()
                latencies.append(time.perf_counter() - sent)

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(args.clients)))
    return len(latencies), time.perf_counter() - started, latencies


def run_store(store: str, url: str, args: argparse.Namespace) -> Figures:
    with serve(url, "--no-worker") as server:
        warm = argparse.Namespace(**{**vars(args), "batches": 2, "seconds": 10.0})
        asyncio.run(load(server.base_url, warm, "warm"))
        batches, seconds, latencies = asyncio.run(load(server.base_url, args, "bench"))
    engine = make_engine(url)
    with engine.connect() as conn:
        stored = conn.execute(select(func.count()).select_from(tool_calls)).scalar_one()
    engine.dispose()
    calls = batches * args.calls
    latencies.sort()
    return Figures(
        store=store, batches=batches, calls=calls, seconds=round(seconds, 2),
        calls_per_second=round(calls / seconds), batches_per_second=round(batches / seconds, 1),
        ack_p50_ms=round(statistics.median(latencies) * 1000, 1) if latencies else 0.0,
        ack_p99_ms=round(latencies[int(0.99 * (len(latencies) - 1))] * 1000, 1)
        if latencies else 0.0,
        stored_rows=stored - 2 * args.calls,  # less the warm-up batches
    )


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="tooltrail bench capture", description=__doc__,
                                formatter_class=HelpFormatter)
    p.add_argument("--stores", nargs="+", choices=["sqlite", "postgresql"],
                   default=["sqlite", "postgresql"])
    p.add_argument("--pg-admin", default=PG_ADMIN, help="PostgreSQL server (a temporary "
                   "database is created on it)")
    p.add_argument("--calls", type=int, default=1000, help="calls per capture")
    p.add_argument("--batches", type=int, default=200, help="captures per store (at most)")
    p.add_argument("--seconds", type=float, default=30.0, help="time per store (at most)")
    p.add_argument("--clients", type=int, default=4, help="concurrent clients")
    p.add_argument("--json", help="also write the figures to this file")
    return p


def main(argv: list[str]) -> int:
    """Entry point of `tooltrail bench capture`."""
    args = parser().parse_args(argv)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request otherwise
    figures: list[dict[str, Any]] = []
    for store in args.stores:
        if store == "sqlite":
            with tempfile.TemporaryDirectory() as folder:
                result = run_store(store, f"sqlite:///{Path(folder) / 'bench.db'}", args)
        else:
            url = temp_database(args.pg_admin)
            try:
                result = run_store(store, url, args)
            finally:
                drop_database(args.pg_admin, url)
        figures.append(asdict(result))
        print(f"{store:10}  {result.batches} captures of {args.calls} calls in "
              f"{result.seconds} s: {result.calls_per_second:,} calls/s committed "
              f"({result.batches_per_second}/s), ack p50 {result.ack_p50_ms} ms "
              f"p99 {result.ack_p99_ms} ms; {result.stored_rows:,} rows stored "
              f"(acknowledged {result.calls:,})", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0 if all(f["stored_rows"] == f["calls"] for f in figures) else 1
