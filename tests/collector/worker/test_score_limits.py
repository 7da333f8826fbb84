"""POST /api/v1/score is open to every `read` key: its body and its work are bounded, and a
request past a bound is refused with the limit named: size and counts before any matching is
done, the time budget while matching."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.server import Server, running_server
from tooltrail.collector.api.app import create_app
from tooltrail.collector.api.routes import score as score_route
from tooltrail.collector.api.routes.score import (
    MAX_EXPECTED_CALLS,
    MAX_SCORE_BYTES,
    MAX_SCORE_CALLS,
    OverBudget,
    within_budget,
)
from tooltrail.collector.config import Settings
from tooltrail.collector.processes import DeadlineChildren


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    path: Path = tmp_path_factory.mktemp("score") / "t.db"
    with running_server(f"sqlite:///{path}", "--no-worker") as s:
        yield s


def body(expected: int, actual: int) -> dict[str, object]:
    return {"expectation": {"match": "in_order",
                            "calls": [{"name": "t", "arguments": {"a": 1}}] * expected},
            "calls": [{"name": "t", "arguments": {"a": i % 2}} for i in range(actual)]}


def test_within_the_limits_is_scored(server: Server) -> None:
    with server.client() as client:
        answer = client.post("/api/v1/score", json=body(MAX_EXPECTED_CALLS, MAX_SCORE_CALLS))
    assert answer.status_code == 200, answer.text
    assert answer.json()["passed"] is True  # 500 of the calls match the 256 expected


def test_too_many_calls_is_422_with_the_limit(server: Server) -> None:
    with server.client() as client:
        answer = client.post("/api/v1/score", json=body(1, MAX_SCORE_CALLS + 1))
        turns = client.post("/api/v1/score", json={
            "expectation": {"calls": [{"name": "t"}]},
            "turns": [{"calls": [{"name": "t"}] * (MAX_SCORE_CALLS // 2 + 1)}] * 2})
    for refused in (answer, turns):
        assert refused.status_code == 422, refused.text
        error = refused.json()["error"]
        assert f"at most {MAX_SCORE_CALLS} calls" in error["message"]
        assert error["details"]["limit"] == MAX_SCORE_CALLS


def test_too_many_expected_calls_is_422_with_the_limit(server: Server) -> None:
    with server.client() as client:
        answer = client.post("/api/v1/score", json=body(MAX_EXPECTED_CALLS + 1, 1))
    assert answer.status_code == 422, answer.text
    assert f"at most {MAX_EXPECTED_CALLS}" in answer.json()["error"]["message"]


def test_oversized_body_is_413_declared_or_streamed(server: Server) -> None:
    data = json.dumps({**body(1, 1), "pad": "x" * MAX_SCORE_BYTES}).encode()

    def chunked() -> Iterator[bytes]:  # no Content-Length: refused while it is read
        for start in range(0, len(data), 64 * 1024):
            yield data[start:start + 64 * 1024]

    with server.client() as client:
        headers = {"content-type": "application/json"}
        for content in (data, chunked()):
            answer = client.post("/api/v1/score", content=content, headers=headers)
            assert answer.status_code == 413, answer.text
            error = answer.json()["error"]
            assert error["code"] == "too_large"
            assert str(MAX_SCORE_BYTES) in error["message"]


def spin() -> None:
    while True:
        sum(range(100))


def quick() -> int:
    return sum(range(1000))


def test_time_budget_interrupts_python_work_and_only_it() -> None:
    children = DeadlineChildren(1, "test")
    try:
        with pytest.raises(OverBudget):
            within_budget(children, 0.05, spin)
        total = within_budget(children, 10.0, quick)  # in time: nothing raised, then or later
    finally:
        children.close()
    for _ in range(200_000):  # nothing of the killed call can land here: it ran elsewhere
        total += 1
    assert total == 499500 + 200_000


def test_scoring_past_the_budget_is_422_with_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(score_route, "MAX_SCORE_SECONDS", 0.0)
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 't.db'}", worker=False))
    client = TestClient(app)  # /score touches no store: the routes alone
    try:
        answer = client.post("/api/v1/score", json=body(100, 500))
    finally:
        client.close()
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert "budget of 0.0 s" in error["message"] and error["details"]["limit"] == 0.0
