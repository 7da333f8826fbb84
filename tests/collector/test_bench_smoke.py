"""The benchmark commands run end to end (tiny sizes; the figures themselves are not asserted:
timings belong in benchmarks, not tests), and what they check about correctness holds."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import drop_postgres_database, new_postgres_database


def run(*args: str, timeout: float = 240) -> str:
    done = subprocess.run([sys.executable, "-m", "collector.cli", "bench", *args],
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


def test_bench_ingest_loses_nothing(tmp_path: object) -> None:
    out = run("ingest", "--database-url", f"sqlite:///{tmp_path}/b.db", "--seconds", "1",
              "--sdk-seconds", "1", "--sdk-clients", "1", "--overload-seconds", "2",
              "--inprocess-requests", "8", "--spans-per-request", "100")
    for line in ("grpc: acknowledged missing from store", "http: acknowledged missing from store",
                 "overload: acknowledged missing from store"):
        assert re.search(re.escape(line) + r"\s+0\n", out), out
    assert re.search(r"overload: server alive\s+1", out), out
    assert re.search(r"time-to-score after last ack.*\s\d+\.\d+\n", out), out
