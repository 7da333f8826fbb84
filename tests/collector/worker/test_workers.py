"""Workers on PostgreSQL: three processes, concurrent ingest, a SIGKILL, and jobs that survive
a restart of every process."""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from sqlalchemy import Engine, func, select

from tests.server import Server, running_server, running_workers
from tests.spans import ToolStep, agent_turn, provider
from tooltrail.collector.bench.seed import seed
from tooltrail.collector.store.db import make_engine
from tooltrail.collector.store.jobs import get_job
from tooltrail.collector.store.tables import conversations, results

EXPECTATION = {"id": "wk", "selector": {"conversation": "*"}, "match": "in_order",
               "calls": [{"name": "lookup_order"}, {"name": "issue_refund"}]}


def wait_until(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def all_scored(engine: Engine) -> bool:
    c = conversations.c
    with engine.connect() as conn:
        dirty = conn.execute(select(func.count()).where(c.scored_seq < c.change_seq)).scalar()
        total = conn.execute(select(func.count()).select_from(conversations)).scalar()
    return dirty == 0 and bool(total)


def scored_twice(engine: Engine) -> list[Any]:
    """(conversation, expectation, version, change_seq, scope) scored more than once."""
    r = results.c
    with engine.connect() as conn:
        return list(conn.execute(
            select(r.conversation_id, r.expectation, r.expectation_version, r.change_seq,
                   r.scope, func.count())
            .group_by(r.conversation_id, r.expectation, r.expectation_version, r.change_seq,
                      r.scope)
            .having(func.count() > 1)
        ))


def current_per_conversation(engine: Engine, version: int) -> dict[int, int]:
    r = results.c
    with engine.connect() as conn:
        rows = conn.execute(
            select(r.conversation_id, func.count())
            .where(r.current, r.expectation == "wk", r.expectation_version == version)
            .group_by(r.conversation_id)
        )
        return {cid: n for cid, n in rows}


@pytest.mark.postgres
def test_three_workers_concurrent_ingest_and_sigkill(pg_url: str) -> None:
    engine = make_engine(pg_url)
    with running_server(pg_url, "--no-worker") as server, \
            running_workers(pg_url, 3, "--lease-seconds", "2", "--worker-batch", "8") as workers:
        with server.client() as client:
            assert client.post("/api/v1/expectations", json=EXPECTATION).status_code == 201

        def ingest(offset: int) -> None:
            tp = provider(OTLPSpanExporter(endpoint=f"{server.base_url}/v1/traces"))
            for i in range(offset, offset + 60):
                agent_turn(tp, f"wk-{i}", [ToolStep("lookup_order", {"id": i}, 1)])
                if i % 3 == 0:
                    agent_turn(tp, f"wk-{i}", [ToolStep("issue_refund", {"id": i}, 1)])
            tp.shutdown()

        threads = [threading.Thread(target=ingest, args=(n * 60,)) for n in range(3)]
        for thread in threads:
            thread.start()
        time.sleep(1.0)
        workers[0].send_signal(signal.SIGKILL)  # mid-run: its leases must expire, not vanish
        for thread in threads:
            thread.join(60)
        wait_until(lambda: all_scored(engine), 60, "every conversation scored")
    with engine.connect() as conn:
        count = conn.execute(select(func.count()).select_from(conversations)).scalar()
    assert count == 180
    per_conversation = current_per_conversation(engine, 1)
    assert len(per_conversation) == 180 and set(per_conversation.values()) == {1}
    assert scored_twice(engine) == []
    engine.dispose()


def job(server: Server, job_id: str) -> dict[str, Any]:
    return dict(httpx.get(f"{server.base_url}/api/v1/jobs/{job_id}").json())


@pytest.mark.postgres
def test_rescoring_job_progress_cancel_and_restart(pg_url: str) -> None:
    engine = make_engine(pg_url)
    seed(engine, 4000, calls=10)
    with running_server(pg_url, "--no-worker") as server:
        with server.client() as client:
            assert client.post("/api/v1/expectations", json=EXPECTATION).status_code == 201
            extra = int(client.post("/api/v1/jobs", json={}).json()["id"])
            cancelled = client.delete(f"/api/v1/jobs/{extra}").json()
            assert cancelled["status"] == "cancelled" and cancelled["total"] == 4000
            relaxed = {**EXPECTATION, "calls": [{"name": "lookup_order"}]}
            assert client.put("/api/v1/expectations/wk", json=relaxed).json()["version"] == 2
        # ids are sequential: v1's job, the cancelled one, v2's job
        v1_job, v2_job = str(extra - 1), str(extra + 1)
        with running_workers(pg_url, 1, "--lease-seconds", "3") as workers:
            wait_until(lambda: job(server, v2_job)["done"] > 0, 60, "the first chunk of v2")
            workers[0].send_signal(signal.SIGKILL)
            workers[0].wait(10)
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(10)

    with engine.connect() as conn:
        interrupted = get_job(conn, int(v2_job))
    assert interrupted is not None and interrupted["status"] == "running"
    assert 0 < interrupted["done"] < 4000, interrupted
    with running_server(pg_url, "--no-worker") as server, \
            running_workers(pg_url, 2, "--lease-seconds", "3"):
        for job_id in (v1_job, v2_job):
            finished = server.wait_for(f"/api/v1/jobs/{job_id}",
                                       lambda b: b["status"] == "done", 120)
            assert finished["done"] == finished["total"] == 4000 and finished["failed"] == 0
        again = job(server, str(extra))
        assert again["status"] == "cancelled" and again["done"] == 0
    current = current_per_conversation(engine, 2)
    assert len(current) == 4000 and set(current.values()) == {1}
    assert scored_twice(engine) == []
    engine.dispose()
