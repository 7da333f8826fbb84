"""A `tooltrail worker` started on a database nobody migrated says once what to do, backs off,
and starts scoring as soon as the database is migrated: on SQLite and PostgreSQL."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import OperationalError

from tests.server import FAST
from tooltrail.collector.bench.process import _stop
from tooltrail.collector.bench.seed import seed
from tooltrail.collector.metrics import Metrics
from tooltrail.collector.store import queries
from tooltrail.collector.store.db import make_engine, migrate
from tooltrail.collector.store.tables import results
from tooltrail.collector.worker import Worker

EXPECTATION = {"id": "wk", "selector": {"conversation": "*"}, "match": "subset",
               "calls": [{"name": "lookup_order"}]}
HINT = "run `tooltrail migrate`"


def wait_for(predicate: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


def test_worker_on_an_unmigrated_database(database_url: str) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "tooltrail", "worker", "--database-url", database_url, *FAST],
        stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines: list[str] = []

    def pump() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            if len(lines) < 10_000:
                lines.append(line)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    engine = None
    try:
        assert wait_for(lambda: any(HINT in line for line in lines), 20), "".join(lines)
        time.sleep(3)  # rounds keep failing meanwhile: nothing more is said
        assert process.poll() is None
        waiting = "".join(lines)
        assert len(lines) == 2, waiting  # "worker running", then the hint, once
        assert "has no tooltrail schema yet" in waiting and "Traceback" not in waiting

        migrate(database_url)
        engine = make_engine(database_url)
        seed(engine, 5, calls=3)
        with engine.begin() as conn:
            queries.add_expectation_version(conn, "wk", EXPECTATION, must_exist=False)

        def scored() -> bool:
            assert engine is not None
            with engine.connect() as conn:
                return conn.execute(select(func.count()).select_from(results)).scalar() == 5

        assert wait_for(scored, 30), "".join(lines)
        assert process.poll() is None
    finally:
        _stop(process)
        reader.join(5)
        if process.stderr is not None:
            process.stderr.close()
        if engine is not None:
            engine.dispose()
    said = "".join(lines)
    assert said.count(HINT) == 1 and "Traceback" not in said, said
    assert "schema is at head now: scoring" in said, said


def test_a_round_that_failed_just_before_the_migration_is_no_error(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The migration may commit between a round failing on the missing tables and the worker's
    look at the schema: that round is not reported as an error; a later failure is."""
    engine = make_engine(database_url)
    worker = Worker(engine, Metrics(), settle_seconds=0.1, poll_seconds=0.1, batch=8,
                    lease_seconds=5)
    caplog.set_level(logging.INFO, logger="tooltrail.collector.worker")
    try:
        assert worker.safe_round() == 0
        migrate(database_url)

        def failed(error: str) -> int:
            raise OperationalError("SELECT ...", {}, Exception(error))

        worker.round = lambda: failed("no such table: conversations")  # type: ignore[method-assign]
        assert worker.safe_round() == 0
        worker.round = lambda: failed("disk I/O error")  # type: ignore[method-assign]
        assert worker.safe_round() == 0
    finally:
        engine.dispose()
    said = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert [level for level, _ in said] == ["ERROR", "INFO", "ERROR"], said
    assert HINT in said[0][1] and "at head now" in said[1][1]
    assert said[2][1] == "worker round failed" and "disk I/O error" in caplog.text
