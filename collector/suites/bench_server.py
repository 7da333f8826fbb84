"""`tooltrail bench check-server`: `tooltrail check --server` with many conversations stored
and a suite that selects a few.

Per store (SQLite, PostgreSQL): stores N conversations (default 100,000) through the writer's
own row path (`collector/bench/seed.py`, no OTLP in between) and marks them scored, then 4
conversations the suite's 4 expectations select, left for the server's worker to score;
starts `tooltrail serve`, applies the suite, waits for the 4 to be scored, and times `tooltrail
check --server` in a child process. Prints its seconds, exit status, the conversations the
summary line and its longest output line. `--client DIR` times the `check` of another
checkout (its directory goes first on the child's PYTHONPATH), for a before/after on one
seeded store. Bounded: `--timeout` seconds per store for scoring and for the check.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from sqlalchemy import text

from tooltrail.collector.bench.process import serve
from tooltrail.collector.bench.scoring import drop_database, temp_database
from tooltrail.collector.bench.seed import conversation_batch, seed
from tooltrail.collector.clihelp import HelpFormatter
from tooltrail.collector.store.db import make_engine, migrate
from tooltrail.collector.store.persist import write_batches

SELECTED = 4


def selected_keys(count: int) -> list[str]:
    """The keys of the suite's conversations (seeded after the `count` others)."""
    return [f"gate-{count + i:07d}" for i in range(SELECTED)]


def suite_of(count: int) -> dict[str, object]:
    return {"name": "check-server-bench", "expectations": [
        {"id": f"gate-bench-{i}", "selector": {"conversation": key},
         "calls": [{"name": "lookup_order"}]} for i, key in enumerate(selected_keys(count))]}


def prepare(url: str, count: int) -> None:
    """`count` conversations of one call, stored and scored; the suite's 4 left to score."""
    migrate(url)
    engine = make_engine(url)
    took = seed(engine, count, 1, per_transaction=2000)
    with engine.begin() as conn:
        conn.execute(text("UPDATE conversations SET scored_seq = change_seq"))  # settled
        rng = random.Random(1)
        write_batches(conn, [conversation_batch(count + i, 1, rng, "gate-")
                             for i in range(SELECTED)], time.time())
    engine.dispose()
    print(f"  stored {count:,} conversations in {took:.1f} s, and {SELECTED} the suite selects")


def run(url: str, store: str, count: int, client: str | None, timeout: float) -> int:
    print(f"{store}:")
    prepare(url, count)
    with tempfile.TemporaryDirectory(prefix="tooltrail-bench-check-server-") as tmp, serve(
            url, "--settle-seconds", "0.2", "--worker-poll-seconds", "0.2") as server:
        base = f"http://127.0.0.1:{server.http_port}"
        suite = Path(tmp) / "suite.json"
        suite.write_text(json.dumps(suite_of(count)))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (client, os.environ.get("PYTHONPATH")) if p)}
        command = [sys.executable, "-m", "tooltrail"]
        subprocess.run([*command, "apply", str(suite), "--server", base], check=True,
                       capture_output=True, timeout=timeout)
        with httpx.Client(base_url=base, timeout=60) as http:
            deadline = time.monotonic() + timeout  # applying queues rescoring jobs
            for key in selected_keys(count):
                while http.get(f"/api/v1/conversations/{key}/results",
                               params={"wait": 20}).json().get("scoring") != "scored":
                    if time.monotonic() > deadline:
                        raise SystemExit(f"{key} was not scored within {timeout:g} s")
        started = time.perf_counter()
        child = subprocess.run(  # cwd: `-m` puts it first on sys.path, before PYTHONPATH
            [*command, "check", str(suite), "--server", base, "--wait", "10"],
            capture_output=True, timeout=timeout, env=env, cwd=tmp, check=False)
        took = time.perf_counter() - started
    if child.returncode not in (0, 1):
        print(child.stderr.decode(errors="replace")[-2000:], file=sys.stderr)
        return 1
    lines = child.stdout.decode().splitlines()
    print(f"  check --server: {took:.2f} s, exit {child.returncode}; {lines[-1]}; longest "
          f"output line {max(len(line) for line in lines):,} characters")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tooltrail bench check-server", description=__doc__,
                                     formatter_class=HelpFormatter)
    parser.add_argument("--admin-url",
                        default="postgresql+psycopg://postgres@127.0.0.1:5432/test",
                        help="server on which a temporary database is created")
    parser.add_argument("--stores", default="sqlite,postgresql")
    parser.add_argument("--conversations", type=int, default=100_000)
    parser.add_argument("--client", metavar="DIR",
                        help="time this checkout's `tooltrail check` (default: this one)")
    parser.add_argument("--timeout", type=float, default=900.0)
    args = parser.parse_args(argv)
    for noisy in ("alembic", "httpx"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    failed = 0
    for store in args.stores.split(","):
        if store == "sqlite":
            with tempfile.TemporaryDirectory() as folder:
                failed |= run(f"sqlite:///{Path(folder) / 'bench.db'}", store,
                              args.conversations, args.client, args.timeout)
        else:
            url = temp_database(args.admin_url)
            try:
                failed |= run(url, store, args.conversations, args.client, args.timeout)
            finally:
                drop_database(args.admin_url, url)
    return failed


if __name__ == "__main__":
    sys.exit(main())
