"""The WAL stays bounded under steady commits while readers' snapshots overlap (a PASSIVE
checkpoint alone never resets the log then, and the file grows without end)."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path

from sqlalchemy import text

from tooltrail.collector.metrics import Metrics
from tooltrail.collector.store.db import WalCheckpointer, make_engine, wal_file_bytes

MIB = 1024 * 1024
# The soak is a count of commits, paced: what the log holds then depends on the checkpointer,
# not on how fast the machine appends (timed and unpaced, one checkpoint round's growth alone
# came near the bound, and a loaded machine wrote too little to show the growth)
ROWS = 1024  # 64 MiB in all
PACE = 0.002  # between two commits
LIMIT = 60.0  # seconds at most


def _soak(path: Path, restart_bytes: int) -> tuple[int, Metrics]:
    """Commit ROWS rows of 64 KiB steadily while two readers keep overlapping snapshots open, with
    the real checkpointer running; the largest WAL file seen, and the metrics."""
    url = f"sqlite:///{path}"
    writer = make_engine(url, background_checkpoint=True)
    reader = make_engine(url, read_only=True)
    with writer.begin() as conn:
        conn.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB)"))
    stop = threading.Event()
    largest = 0

    def write() -> None:
        nonlocal largest
        for _ in range(ROWS):
            if stop.is_set():
                return
            with writer.begin() as conn:
                conn.execute(text("INSERT INTO t (body) VALUES (:b)"), {"b": os.urandom(64 * 1024)})
            largest = max(largest, wal_file_bytes(str(path)))
            time.sleep(PACE)

    def read(offset: float) -> None:
        time.sleep(offset)
        while not stop.is_set():  # short snapshots; two readers keep one open nearly always
            with reader.connect() as conn:
                conn.execute(text("SELECT count(*) FROM t")).scalar()
                time.sleep(0.01)
            time.sleep(0.002)

    async def run(metrics: Metrics) -> None:
        checkpointer = WalCheckpointer(url, interval=0.05, restart_bytes=restart_bytes,
                                       metrics=metrics)
        async with checkpointer:
            writing = threading.Thread(target=write)
            threads = [writing, threading.Thread(target=read, args=(0,)),
                       threading.Thread(target=read, args=(0.006,))]
            for thread in threads:
                thread.start()
            await asyncio.to_thread(writing.join, LIMIT)
            stop.set()
            for thread in threads:
                await asyncio.to_thread(thread.join)

    metrics = Metrics()
    asyncio.run(run(metrics))
    writer.dispose()
    reader.dispose()
    return largest, metrics


def _value(metrics: Metrics, name: str) -> float:
    value = metrics.registry.get_sample_value(name)
    assert value is not None
    return value


def test_passive_checkpoints_alone_let_the_wal_grow(tmp_path: Path) -> None:
    largest, metrics = _soak(tmp_path / "passive.db", restart_bytes=0)
    assert largest > 48 * MIB  # without RESTART it does grow: the experiment the fix rests on
    assert _value(metrics, "tooltrail_sqlite_wal_restarts_total") == 0


def test_the_wal_is_restarted_once_it_outgrows_its_bound(tmp_path: Path) -> None:
    largest, metrics = _soak(tmp_path / "restart.db", restart_bytes=1 * MIB)
    assert largest < 24 * MIB
    assert _value(metrics, "tooltrail_sqlite_wal_restarts_total") >= 1
    assert 0 < _value(metrics, "tooltrail_sqlite_wal_bytes") <= largest  # (truncated on exit)
