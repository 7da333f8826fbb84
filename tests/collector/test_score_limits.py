"""POST /api/v1/score is open to every `read` key: its body and its work are bounded, and a
request past a bound is refused with the limit named, before any matching is done."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from collector.api.routes.score import MAX_EXPECTED_CALLS, MAX_SCORE_BYTES, MAX_SCORE_CALLS
from tests.server import Server, running_server


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
