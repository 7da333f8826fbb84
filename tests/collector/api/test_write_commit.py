"""A REST write answers after its transaction commits: a commit that fails is answered as the
error it is (a retryable 503), never with the success the route had prepared."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import event, select
from sqlalchemy.exc import OperationalError

from tooltrail.collector.api.app import create_app
from tooltrail.collector.config import Settings
from tooltrail.collector.store.db import make_engine, migrate
from tooltrail.collector.store.tables import conversations


def test_a_failed_commit_is_not_answered_as_success(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'tooltrail.db'}"
    migrate(url)
    engine = make_engine(url)
    with engine.begin() as conn:
        conn.execute(conversations.insert().values(project="default", key="doomed",
                                                   first_seen=1.0, last_seen=1.0))
    app = create_app(Settings(database_url=url, worker=False))
    failing = {"on": True}

    def refuse(conn: Any) -> None:
        if failing["on"]:
            raise OperationalError("COMMIT", {}, Exception("disk I/O error"))

    event.listen(app.state.tooltrail.engine, "commit", refuse)
    client = TestClient(app)  # no lifespan: the routes alone
    try:
        answer = client.delete("/api/v1/conversations/doomed")
        assert answer.status_code == 503, answer.text
        assert int(answer.headers["Retry-After"]) >= 1
        with engine.connect() as conn:  # nothing was deleted, and the client was told so
            assert conn.execute(select(conversations.c.key)).scalars().all() == ["doomed"]
        failing["on"] = False
        assert client.delete("/api/v1/conversations/doomed").status_code == 204
        with engine.connect() as conn:
            assert conn.execute(select(conversations.c.key)).scalars().all() == []
    finally:
        client.close()
        engine.dispose()
