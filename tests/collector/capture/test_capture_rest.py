"""ADK events over REST, and the security of every capture route (ingest role, 413, no stored
data echoed), on both stores through the real server. The event files were written by the
real google-adk (tests/captures/adk_events/capture.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from sqlalchemy import func, select

from tests.server import Server, running_server
from tooltrail.collector.store.db import make_engine
from tooltrail.collector.store.tables import tool_calls

FOLDER = Path(__file__).resolve().parents[2] / "captures" / "adk_events"
EXPECTED = json.loads((FOLDER / "expected_events.json").read_text())
KEYS = "ingest:ingest-key,read:read-key,admin:admin-key"
LIMIT = 64_000


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url) as s:
        yield s


def post_events(server: Server, key: str, body: bytes, media: str) -> Any:
    with server.client() as client:
        return client.post(f"/api/v1/conversations/{key}/adk-events", content=body,
                           headers={"content-type": media})


def trajectory(server: Server, key: str) -> list[list[dict[str, Any]]]:
    with server.client() as client:
        conversation = client.get(f"/api/v1/conversations/{key}").json()
    return [[{"name": c["name"], "arguments": c["arguments"], "error": c["error"] is not None,
              "step": c["step"], "call_id": c["call_id"], "source": c["source"]}
             for c in t["tool_calls"]] for t in conversation["turns"]]


def expected() -> list[list[dict[str, Any]]]:
    return [[{**c, "source": "adk_events"} for c in t["calls"]] for t in EXPECTED["turns"]]


def count(url: str) -> int:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            found: int = conn.execute(select(func.count()).select_from(tool_calls)).scalar_one()
            return found
    finally:
        engine.dispose()


@pytest.mark.parametrize(("name", "media"), [
    ("events.jsonl", "application/x-ndjson"),
    ("events.camel.json", "application/json"),
    ("kagent_rows.jsonl", "application/jsonl"),
])
def test_adk_events_are_stored_as_their_turns(
    server: Server, module_database_url: str, name: str, media: str,
) -> None:
    key = f"adk-rest-{name.split('.')[1]}-{name.split('.')[0]}"
    body = (FOLDER / name).read_bytes()
    answer = post_events(server, key, body, media)
    assert answer.status_code == 200, answer.text
    assert (answer.json()["turns"], answer.json()["calls"]) == (2, 4)
    assert trajectory(server, key) == expected()
    stored = count(module_database_url)
    assert post_events(server, key, body, media).status_code == 200  # a resend
    assert count(module_database_url) == stored


def test_bad_event_line_is_a_400_and_stores_nothing(server: Server) -> None:
    good = (FOLDER / "events.jsonl").read_bytes().splitlines()[0]
    answer = post_events(server, "adk-bad", good + b"\n{not json\n", "application/x-ndjson")
    assert answer.status_code == 400
    assert answer.json()["error"]["message"].startswith("line 2: not JSON")
    with server.client() as client:
        assert client.get("/api/v1/conversations/adk-bad").status_code == 404


@pytest.fixture(scope="module")
def secured(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url, "--max-request-bytes", str(LIMIT),
                        env={"TOOLTRAIL_API_KEYS": KEYS}) as s:
        yield s


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


SECRET = {"calls": [{"name": "verify_identity",
                     "arguments": {"email": "ann@example.com", "code": "481516"},
                     "result": "verified"}]}
ROUTES = [  # (path, content type, body) of every capture route
    ("/api/v1/conversations/sec-1/turns/0/calls", "application/json",
     json.dumps(SECRET).encode()),
    ("/api/v1/conversations/sec-2/adk-events", "application/x-ndjson",
     (FOLDER / "events.jsonl").read_bytes()),
    ("/api/v1/a2a/tasks?conversation=sec-3", "application/json", json.dumps({
        "id": "task-sec", "contextId": "sec-3", "artifacts": [{
            "artifactId": "a", "extensions": ["https://arksim.arklex.ai/a2a/tool-call-capture/v1"],
            "metadata": {"https://arksim.arklex.ai/a2a/tool-call-capture/v1/tool_calls":
                         SECRET["calls"]}}]}).encode()),
]


@pytest.mark.parametrize(("path", "media", "body"), ROUTES)
def test_capture_needs_the_ingest_role_and_echoes_nothing_stored(
    secured: Server, path: str, media: str, body: bytes,
) -> None:
    headers = {"content-type": media}
    with secured.client() as client:
        assert client.post(path, content=body, headers=headers).status_code == 401
        refused = client.post(path, content=body, headers={**headers, **bearer("read-key")})
        assert refused.status_code == 403
        answer = client.post(path, content=body, headers={**headers, **bearer("ingest-key")})
        assert answer.status_code == 200, answer.text
        for secret in ("ann@example.com", "481516", "verified", "shipped"):
            assert secret not in answer.text
        key = path.split("/")[4] if "conversations" in path else "sec-3"
        # an ingest key reads nothing back; a read key does
        assert client.get(f"/api/v1/conversations/{key}",
                          headers=bearer("ingest-key")).status_code == 403
        assert client.get(f"/api/v1/conversations/{key}",
                          headers=bearer("read-key")).status_code == 200
        assert client.post(path, content=body,
                           headers={**headers, **bearer("admin-key")}).status_code == 200


@pytest.mark.parametrize(("path", "media", "body"), ROUTES)
def test_capture_above_the_request_limit_is_413(
    secured: Server, path: str, media: str, body: bytes,
) -> None:
    big = path.replace("sec-", "big-")
    padded = body + b" " * (LIMIT + 1 - len(body)) if len(body) <= LIMIT else body
    headers = {"content-type": media, **bearer("ingest-key")}
    with secured.client() as client:
        answer = client.post(big, content=padded, headers=headers)
        assert answer.status_code == 413, answer.text
        assert answer.json()["error"]["code"] == "too_large"

        def chunks() -> Iterator[bytes]:  # no content-length: refused while it is read
            yield padded

        streamed = client.post(big, content=chunks(), headers=headers)
        assert streamed.status_code == 413
        key = big.split("/")[4] if "conversations" in big else "big-3"
        assert client.get(f"/api/v1/conversations/{key}",
                          headers=bearer("read-key")).status_code == 404


def test_capture_backpressure_refuses_retryably_and_loses_no_acknowledged_call(
    database_url: str,
) -> None:
    """Above the ingest budget a capture gets 503 + Retry-After (nothing stored of it); every
    capture answered 200 is committed."""
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    calls = [{"name": "search", "arguments": {"q": "x" * 100, "i": i}} for i in range(300)]
    body = json.dumps({"calls": calls}).encode()
    with running_server(database_url, "--max-queue-bytes", str(len(body) * 4)) as s:
        def send(i: int) -> httpx.Response:
            with s.client() as client:
                return client.post(f"/api/v1/conversations/bp-{i}/turns/0/calls", content=body,
                                   headers={"content-type": "application/json"})

        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(send, range(24)))
    codes = [a.status_code for a in answers]
    assert set(codes) <= {200, 503} and 200 in codes and 503 in codes, codes
    assert all(a.headers["retry-after"].isdigit() for a in answers if a.status_code == 503)
    assert count(database_url) == 300 * codes.count(200)


def routes_keyed_by(key: str) -> list[tuple[str, str, bytes]]:
    """(path, media type, body) of each capture route, all naming conversation `key`."""
    return [
        (f"/api/v1/conversations/{key}/turns/0/calls", "application/json", ROUTES[0][2]),
        (f"/api/v1/conversations/{key}/adk-events", "application/x-ndjson", ROUTES[1][2]),
        (f"/api/v1/a2a/tasks?conversation={key}", "application/json", ROUTES[2][2]),
    ]


def test_long_conversation_keys_are_stored_on_every_route(server: Server) -> None:
    """A long conversation key is stored as sent; the turn keys made from it are shortened to
    what an index holds, so the route never fails (a retryable 503 for a request that can
    never succeed)."""
    key = "long-" + "k" * 600
    with server.client() as client:
        for path, media, body in routes_keyed_by(key):
            answer = client.post(path, content=body, headers={"content-type": media})
            assert answer.status_code == 200, (path[:40], answer.text)
        listed = client.get("/api/v1/conversations", params={"limit": 1000}).json()["data"]
        (stored,) = [c["key"] for c in listed if c["key"].startswith("long-")]
        assert stored == key
        conversation = client.get(f"/api/v1/conversations/{quote(stored)}").json()
    # the ADK session's two turns (the explicit turn 0 joins the first), then the A2A task
    assert [[c["source"] for c in t["tool_calls"]] for t in conversation["turns"]] == [
        ["adk_events", "adk_events", "explicit"], ["adk_events", "adk_events"], ["a2a"]]


def test_keys_past_what_an_index_holds_are_refused_on_every_route(server: Server) -> None:
    """The rule of OTLP keys (docs/values.md): a key over 1,024 bytes is refused with a
    permanent 400 naming its size, and nothing of the request is stored."""
    key = "huge-" + "é" * 600  # 1,205 bytes of UTF-8
    with server.client() as client:
        for path, media, body in routes_keyed_by(key):
            answer = client.post(path, content=body, headers={"content-type": media})
            assert answer.status_code == 400, (path[:40], answer.text)
            assert "1205 bytes" in answer.json()["error"]["message"]
        listed = client.get("/api/v1/conversations", params={"limit": 1000}).json()["data"]
    assert not [c for c in listed if c["key"].startswith("huge-")]
