"""Two group commits writing to the same conversation at once (PostgreSQL: the writer runs
two transactions, and replicas more) keep exact counts: conversations are locked in id order
before they are recounted."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from sqlalchemy import select

from collector.extract import extract
from collector.store.db import make_engine, migrate
from collector.store.persist import prepare, write_prepared
from collector.store.tables import conversations
from tests.conftest import drop_postgres_database, new_postgres_database
from tests.spans import ToolStep, agent_turn, capture, to_request


@pytest.fixture
def pg_url() -> Iterator[str]:
    url = new_postgres_database()
    try:
        yield url
    finally:
        drop_postgres_database(url)


def turns(conversation: str, count: int) -> list[object]:
    tp, spans = capture()
    for i in range(count):
        agent_turn(tp, conversation, [ToolStep("t", {"i": i}, i), ToolStep("u", {}, None)])
    return [prepare(extract(to_request(spans.get_finished_spans())))]


@pytest.mark.postgres
def test_overlapping_groups_keep_exact_counts(pg_url: str) -> None:
    migrate(pg_url)
    engine = make_engine(pg_url)
    with engine.begin() as conn:  # the conversation exists before both groups
        write_prepared(conn, turns("shared", 1), time.time())  # type: ignore[arg-type]
    first = engine.connect()
    tx = first.begin()
    write_prepared(first, turns("shared", 3), time.time())  # type: ignore[arg-type]
    done = threading.Event()

    def second() -> None:
        with engine.begin() as conn:
            write_prepared(conn, turns("shared", 2), time.time())  # type: ignore[arg-type]
        done.set()

    thread = threading.Thread(target=second)
    thread.start()
    time.sleep(0.5)
    assert not done.is_set(), "the second group should wait for the conversation's lock"
    tx.commit()
    first.close()
    thread.join(10)
    assert done.is_set()
    with engine.connect() as conn:
        row = conn.execute(select(conversations).where(conversations.c.key == "shared")).one()
    assert (row.turn_count, row.call_count) == (6, 12)
    engine.dispose()
