"""The REST API while the database is unreachable: a retryable 503 with Retry-After in the one
error shape, as ingest answers (never a 500), on both stores."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from tests.collector.durability.test_outage_ingest import PostgresServer, _free_port
from tests.server import running_server
from tooltrail.collector.api.app import create_app
from tooltrail.collector.config import Settings

EXPECTATION = {"id": "outage-exp", "expect": {"calls": [{"name": "lookup"}]}}


def assert_retryable(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert int(response.headers["Retry-After"]) >= 1
    error = response.json()["error"]
    assert error["code"] == "unavailable" and "retry" in error["message"], error


def check_routes(client: httpx.Client | TestClient) -> None:
    assert_retryable(client.get("/api/v1/conversations"))
    assert_retryable(client.get("/api/v1/expectations"))
    assert_retryable(client.post("/api/v1/expectations", json=EXPECTATION))


@pytest.fixture(params=["sqlite", "postgres"])
def unreachable_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database that cannot be reached: a SQLite file in a directory that does not exist,
    a PostgreSQL port nothing listens on."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'gone' / 'tooltrail.db'}"
    else:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{_free_port()}/test"


def test_unreachable_store_is_a_retryable_503(unreachable_url: str) -> None:
    app = create_app(Settings(database_url=unreachable_url, worker=False))
    client = TestClient(app)  # no lifespan: the routes alone, against the unreachable store
    try:
        check_routes(client)
    finally:
        client.close()


@pytest.mark.postgres
def test_rest_answers_503_while_postgresql_is_down() -> None:
    postgres = PostgresServer()
    try:
        postgres.start()
        with running_server(postgres.url, "--no-worker") as server, server.client() as client:
            assert client.get("/api/v1/conversations").status_code == 200
            postgres.stop()
            check_routes(client)
            postgres.start()
            assert client.get("/api/v1/conversations").status_code == 200
    finally:
        postgres.remove()
