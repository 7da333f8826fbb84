"""Scale-out, proven on PostgreSQL: two `serve --no-worker` replicas take the load, two
`tooltrail worker`s score it; one replica and one worker are SIGKILLed mid-run. Nothing
acknowledged is lost, and every conversation is scored exactly once per expectation version
(an expectation changed mid-run is rescored by a job, once)."""

from __future__ import annotations

import time

import httpx
from sqlalchemy import func, select

from tests.server import running_server, running_workers
from tests.spans import ToolStep, agent_turn, capture, to_request
from tooltrail.collector.store.db import make_engine
from tooltrail.collector.store.tables import conversations, results

EXPECTATION = {"id": "scale", "selector": {"conversation": "so-*"}, "match": "subset",
               "calls": [{"name": "lookup"}]}
REQUESTS, PER_REQUEST = 40, 5  # bounded load: 200 conversations
PROTOBUF = {"Content-Type": "application/x-protobuf"}


def body(first: int) -> bytes:
    """One OTLP request of PER_REQUEST one-turn conversations, as the SDK's exporter sends."""
    tp, memory = capture()
    for n in range(first, first + PER_REQUEST):
        agent_turn(tp, f"so-{n:04d}", [ToolStep("lookup", {"n": n}, n)])
    tp.shutdown()
    return to_request(memory.get_finished_spans()).SerializeToString()


def test_two_replicas_two_workers_survive_a_kill(pg_url: str) -> None:
    engine = make_engine(pg_url)
    lease = ("--lease-seconds", "3")  # a killed worker's leases expire soon
    with (running_server(pg_url, "--no-worker") as a, running_server(pg_url, "--no-worker") as b,
          running_workers(pg_url, 2, *lease) as workers):
        with a.client() as client:
            assert client.post("/api/v1/expectations", json=EXPECTATION).status_code == 201
        acknowledged: set[str] = set()
        deadline = time.monotonic() + 120
        replicas = [a, b]
        for i in range(REQUESTS):
            assert time.monotonic() < deadline, "load did not finish in time"
            if i == REQUESTS // 2:  # mid-run: one replica and one worker die without warning
                b.process.kill()
                workers[0].kill()
                with a.client() as client:  # and a new version, rescored by a job
                    changed = {**EXPECTATION, "match": "superset"}
                    assert client.put("/api/v1/expectations/scale", json=changed).status_code in (
                        200, 201)
            data = body(i * PER_REQUEST)
            for replica in (replicas[i % 2], a):  # the loadbalancing exporter fails over
                try:
                    answer = httpx.post(f"{replica.base_url}/v1/traces", content=data,
                                        headers=PROTOBUF, timeout=10)
                except httpx.TransportError:
                    continue
                if answer.status_code == 200:
                    acknowledged.update(f"so-{n:04d}" for n in range(i * PER_REQUEST,
                                                                     (i + 1) * PER_REQUEST))
                    break
        assert len(acknowledged) == REQUESTS * PER_REQUEST
        assert b.process.wait(10) != 0 and workers[0].wait(10) != 0  # really killed

        def per_version() -> dict[int, list[int]]:
            with engine.connect() as conn:
                rows = conn.execute(
                    select(results.c.expectation_version, func.count())
                    .where(results.c.expectation == "scale")
                    .group_by(results.c.expectation_version, results.c.conversation_id)
                ).all()
            out: dict[int, list[int]] = {}
            for version, count in rows:
                out.setdefault(version, []).append(count)
            return out

        scored: dict[int, list[int]] = {}
        wait = time.monotonic() + 90
        while time.monotonic() < wait:
            scored = per_version()
            if len(scored.get(2, [])) == len(acknowledged):
                break
            time.sleep(0.5)
        time.sleep(4)  # past a lease: a redo of killed work would have written by now
        scored = per_version()
        with engine.connect() as conn:
            stored = set(conn.execute(
                select(conversations.c.key).where(conversations.c.key.like("so-%"))
            ).scalars())
    engine.dispose()
    assert stored == acknowledged  # nothing acknowledged is lost
    assert len(scored[2]) == len(acknowledged) and set(scored[2]) == {1}  # each once
    assert set(scored.get(1, [1])) == {1}  # the first version: at most once each
