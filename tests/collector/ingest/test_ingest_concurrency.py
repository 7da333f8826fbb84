"""Two group commits writing to the same conversation at once (PostgreSQL: the writer runs
two transactions, and replicas more) keep exact counts: conversations are locked in id order
before they are recounted."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from sqlalchemy import select

from tests.conftest import drop_postgres_database, new_postgres_database
from tests.spans import ToolStep, agent_turn, capture, to_request
from tooltrail.collector.extract import extract
from tooltrail.collector.store.db import make_engine, migrate
from tooltrail.collector.store.persist import (
    insert_turns,
    prepare,
    refresh_conversations,
    write_prepared,
)
from tooltrail.collector.store.tables import conversations


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


@pytest.mark.postgres
def test_groups_that_both_add_turns_before_recounting_do_not_deadlock(pg_url: str) -> None:
    """Inserting a turn takes a key-share lock on its conversation (the turns foreign key);
    the recount must lock the conversation in a mode that does not conflict with it, or two
    groups that both inserted turns into one conversation wait on each other (deadlock)."""
    migrate(pg_url)
    engine = make_engine(pg_url)
    with engine.begin() as conn:
        write_prepared(conn, turns("both", 1), time.time())  # type: ignore[arg-type]
        cid = conn.execute(select(conversations.c.id)).scalar_one()
    other = engine.connect()
    tx = other.begin()  # another group: its turn is inserted, its recount not yet run
    insert_turns(other, [(cid, "turn-of-the-other-group", "t" * 32, 1, 2, 3, True, "[]", None)])
    errors: list[BaseException] = []

    def group() -> None:
        try:
            with engine.begin() as conn:
                write_prepared(conn, turns("both", 2), time.time())  # type: ignore[arg-type]
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    thread = threading.Thread(target=group)
    thread.start()
    thread.join(0.5)  # running, or waiting on the other group's lock
    try:
        refresh_conversations(other, {cid}, {}, time.time())
        tx.commit()
    except BaseException as exc:
        errors.append(exc)
        tx.rollback()
    other.close()
    thread.join(10)
    assert not thread.is_alive()
    assert errors == []
    with engine.connect() as conn:
        row = conn.execute(select(conversations).where(conversations.c.id == cid)).one()
    assert (row.turn_count, row.call_count) == (4, 6)
    engine.dispose()
