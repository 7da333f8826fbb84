"""The web view and the HTML report in a real browser (headless Chromium via Playwright),
against the real server on both stores, fed with a captured framework's spans
(tests/captures/pydantic_ai: Pydantic AI's own OTel output, two parallel calls, a failing
tool) and spans from the OpenTelemetry SDK (tests/spans.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server import Server, running_server
from tests.spans import ToolStep, agent_turn, capture, to_request
from tests.ui.browser import artifacts, chromium
from tooltrail.collector.ui.report import render_report

CAPTURE = Path(__file__).resolve().parents[1] / "captures" / "pydantic_ai" / "spans.otlp.pb"
KEY = "conv-pydantic-ai-0001"
HOSTILE = "<script>window.__pwned = 1</script><img src=x onerror=alert(1)>"
HOSTILE_ANSWER = '"><img src=x onerror=alert(2)><script>window.__pwned = 2</script>'
LONG = "lorem ipsum " * 100  # a result long enough to be folded
FILLER = 55  # more than one page (50) of conversations
PB = {"content-type": "application/x-protobuf"}

# Fails on the capture: get_time was asked for Paris, not London; nobody booked a flight; a
# convert_* tool was called.
FAILING = {
    "id": "weather-then-time",
    "selector": {"service": "tooltrail-capture-pydantic-ai"},
    "match": "in_order",
    "calls": [
        {"name": "get_weather", "arguments": {"city": "Paris"}},
        {"name": "get_time", "arguments": {"city": "London"}},
        {"name": "book_flight"},
    ],
    "forbid": ["convert_*"],
}
PASSING = {
    "id": "asks-the-weather",
    "selector": {"service": "tooltrail-capture-pydantic-ai"},
    "match": "superset",
    "calls": [{"name": "get_weather", "arguments": {"city": "London"}}],
}
HOSTILE_EXP = {"id": "hostile", "selector": {"conversation": "hostile-*"},
               "calls": [{"name": "search", "arguments": {"q": "<b>bold</b>"}}]}


def requested_only(tp: Any) -> None:
    """A turn whose model asked for `approve_refund`, which never ran (its request is only in
    the chat span's gen_ai.output.messages), beside one executed call."""
    tracer = tp.get_tracer("tests.ui")
    part = {"type": "tool_call", "name": "approve_refund", "arguments": {"id": 7},
            "id": "call_never"}
    root = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support",
            "gen_ai.conversation.id": "unexecuted-1"}
    chat = {"gen_ai.operation.name": "chat",
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [part]}])}
    with tracer.start_as_current_span("invoke_agent support", attributes=root), \
            tracer.start_as_current_span("chat m", attributes=chat):
        pass
    agent_turn(tp, "unexecuted-1", [ToolStep("lookup", {"n": -1}, 0)])


def no_content(tp: Any) -> None:
    """A turn recorded with content capture off: no messages on any span."""
    tracer = tp.get_tracer("tests.ui")
    root = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support",
            "gen_ai.conversation.id": "plain-1"}
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
            "gen_ai.tool.call.id": "call_plain", "gen_ai.tool.call.arguments": "{}",
            "app.note": HOSTILE}  # kept among the span's raw attributes
    with tracer.start_as_current_span("invoke_agent support", attributes=root):
        with tracer.start_as_current_span("chat m", attributes={"gen_ai.operation.name": "chat"}):
            pass
        with tracer.start_as_current_span("execute_tool lookup", attributes=tool):
            pass


def ingest(server: Server) -> None:
    with server.client() as client:
        tp, exporter = capture()
        agent_turn(tp, "hostile-1", [ToolStep("search", {"q": HOSTILE},
                                              {"html": HOSTILE, "page": LONG})],
                   answer=HOSTILE_ANSWER)
        requested_only(tp)
        no_content(tp)
        for i in range(FILLER):
            agent_turn(tp, f"filler-{i:03d}", [ToolStep("lookup", {"n": i}, i)])
        body = to_request(exporter.get_finished_spans()).SerializeToString()
        assert client.post("/v1/traces", content=body, headers=PB).status_code == 200
        server.wait_for("/api/v1/conversations", lambda d: len(d["data"]) == FILLER + 3,
                        params={"limit": 100})  # stored before the capture: the capture is newest
        assert client.post("/v1/traces", content=CAPTURE.read_bytes(), headers=PB).status_code \
            == 200
        bad = client.post("/v1/traces", content=b"\x0a\xff not protobuf", headers=PB)
        assert bad.status_code == 400
        for exp in (FAILING, PASSING, HOSTILE_EXP):
            assert client.post("/api/v1/expectations", json=exp).status_code == 201


def scored(server: Server, key: str, n: int) -> list[dict[str, Any]]:
    answer = server.wait_for(f"/api/v1/conversations/{key}/results",
                             lambda d: len(d["data"]) >= n, timeout=60)
    return list(answer["data"])


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url) as s:
        ingest(s)
        server_total = FILLER + 4
        s.wait_for("/api/v1/conversations", lambda d: len(d["data"]) == server_total,
                   params={"limit": 100})
        scored(s, KEY, 2)
        scored(s, "hostile-1", 1)
        yield s


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return artifacts(tmp_path_factory)


def test_list_conversation_expectation(server: Server, browser: Any, shots: Path,
                                       module_database_url: str) -> None:
    store = module_database_url.split(":", 1)[0].split("+")[0]
    results = {r["expectation"]: r for r in scored(server, KEY, 2)}
    failing = results["weather-then-time"]
    assert not failing["passed"] and results["asks-the-weather"]["passed"]
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(server.base_url + "/")
    assert page.url == server.base_url + "/ui/"
    row = page.locator("table.conversations tr", has_text=KEY)
    assert "✗ weather-then-time" in row.inner_text()
    assert "✓ asks-the-weather" in row.inner_text()
    row.get_by_role("link", name=KEY).click()
    page.wait_for_url(f"**/ui/conversations/{KEY}?project=default")  # links carry the project
    text = page.inner_text("main")
    for name in ("get_weather", "get_time", "convert_currency"):
        assert name in text
    assert "2 parallel calls" in text  # turn 1, step 0: Paris and London side by side
    assert page.locator(".turn").count() == 3
    assert "FX service unavailable" in text  # the failing tool's error
    verdict = page.locator("section.verdict", has_text="weather-then-time")
    assert failing["reason"] in verdict.inner_text()
    statuses = verdict.locator("table.diff tbody tr").evaluate_all(
        "rows => rows.map(r => r.dataset.status)")
    kinds = [d["kind"] for d in failing["differences"]]
    assert {"argument", "missing", "forbidden"} <= set(kinds)
    # expected #1 paired with a call, #2 its wrong-argument call, #3 missing, then the
    # actual calls no expected call paired (the forbidden one among them)
    assert statuses[:3] == ["paired", "argument", "missing"], statuses
    assert "forbidden" in statuses[3:]
    argument_row = verdict.locator("tr[data-status=argument]")
    assert "get_time" in argument_row.inner_text() and '"London"' in argument_row.inner_text()
    assert '"Paris"' in argument_row.inner_text()  # expected vs actual
    for d in failing["differences"]:
        assert d["message"] in verdict.inner_text()
    page.screenshot(path=str(shots / f"conversation-{store}-1280.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390 + 1
    page.screenshot(path=str(shots / f"conversation-{store}-390.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})
    verdict.get_by_role("link", name="weather-then-time").click()
    page.wait_for_url("**/ui/expectations/weather-then-time")
    text = page.inner_text("main")
    assert "match: in_order" in text and "book_flight" in text  # the YAML definition
    assert "v1" in text
    (bar,) = page.locator("svg.chart g title").all_text_contents()  # one day, nothing passed
    assert bar.endswith(": 0.0% of 1 passed")
    assert "failed" in text
    page.screenshot(path=str(shots / f"expectation-{store}.png"), full_page=True)
    page.get_by_role("link", name=failing["reason"]).click()
    page.wait_for_url("**/ui/?*reason=*")
    listed = page.locator("table.conversations tbody tr").all_inner_texts()
    assert len(listed) == 1 and KEY in listed[0]
    page.close()


def expected_column_widths(page: Any) -> list[float]:
    """The rendered width of each expected cell of the verdict tables."""
    return page.locator("table.diff tbody td:nth-child(2)").evaluate_all(
        "cells => cells.map(c => c.getBoundingClientRect().width)")


def test_turns_as_they_happened(server: Server, browser: Any, shots: Path) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(server.base_url + f"/ui/conversations/{KEY}")
    first = page.locator(".turn").first
    question = "What's the weather in Paris and London, and what time is it in Paris?"
    assert first.locator(".msg.user").inner_text().endswith(question)
    assert "Paris 18C, London 14C; it is 12:00 in Paris." in first.locator(
        ".msg.answer").inner_text()
    steps = first.locator(".modelsteps li").all_inner_texts()
    assert len(steps) == 3, steps  # the capture's three chat spans, in order
    assert "requested get_weather, get_weather" in steps[0] and "get_time" in steps[1]
    assert "answered" in steps[2]
    assert first.locator("h3 .dur").inner_text().endswith("ms")  # the turn's duration
    assert all(d.endswith(("ms", " s")) for d in first.locator("article.call .dur")
               .all_inner_texts())
    assert first.locator("article.call .dur").count() == 3
    bars = first.locator(".waterfall .bar")
    assert not bars.first.is_visible()  # folded until asked for
    first.locator(".waterfall summary").click()
    assert bars.count() == 7 and bars.first.locator(".label").inner_text() == \
        "invoke_agent travel_assistant"
    raw = first.locator("article.call details.raw").first
    raw.locator("summary").click()  # the call span's raw attributes, one click away
    assert "gen_ai.tool.call.result" in raw.inner_text()
    page.screenshot(path=str(shots / "turns-1280.png"), full_page=True)
    # the expected column stays readable: never a sliver that wraps one token per line
    assert min(expected_column_widths(page)) >= 200
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390 + 1
    assert min(expected_column_widths(page)) >= 200  # its table scrolls sideways instead
    page.screenshot(path=str(shots / "turns-390.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(server.base_url + "/ui/conversations/plain-1")
    assert "carry no message content" in page.inner_text(".turn")
    assert page.locator(".msg").count() == 0 and page.locator(".modelsteps li").count() == 1
    raw = page.locator("article.call details.raw")
    raw.locator("summary").click()  # raw attributes of a call without content: there too,
    assert '"gen_ai.tool.call.id": "call_plain"' in raw.inner_text()
    assert HOSTILE in raw.inner_text()  # a hostile value among them as text
    assert page.locator("main script, main img").count() == 0
    page.goto(server.base_url + "/ui/conversations/hostile-1")
    assert page.locator(".msg.answer .text").inner_text() == HOSTILE_ANSWER
    assert page.locator("main script, main img").count() == 0
    assert page.evaluate("window.__pwned") is None and dialogs == []
    page.screenshot(path=str(shots / "turns-hostile.png"), full_page=True)
    page.close()


def list_keys(page: Any) -> list[str]:
    return page.locator("table.conversations tbody tr td:first-child a").all_inner_texts()


def test_filters_and_pagination(server: Server, browser: Any, shots: Path) -> None:
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.goto(server.base_url + "/ui/")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390 + 1  # the table scrolls
    page.screenshot(path=str(shots / "list-390.png"))
    page.set_viewport_size({"width": 1280, "height": 900})
    first = list_keys(page)
    assert len(first) == 50 and first[0] == KEY  # newest first: the capture came last
    page.get_by_role("link", name="older »").click()
    second = list_keys(page)
    assert len(second) == FILLER + 4 - 50 and not set(first) & set(second)
    assert page.get_by_role("link", name="older »").count() == 0
    page.get_by_role("link", name="« newest").click()
    assert list_keys(page) == first
    for _ in range(40):  # by keyboard alone: Tab through the filters to the first row, Enter
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.textContent") == KEY:
            break
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/ui/conversations/{KEY}?project=default")  # links carry the project
    page.go_back()
    # the filter form, filled and submitted by keyboard
    page.get_by_label("Tool").fill("convert_currency")
    page.get_by_label("Tool").press("Enter")
    page.wait_for_url("**tool=convert_currency**")
    assert list_keys(page) == [KEY]
    page.goto(server.base_url + "/ui/")
    page.get_by_label("Verdict").select_option("false")
    page.get_by_role("button", name="Filter").click()
    assert set(list_keys(page)) == {KEY, "hostile-1"}
    page.goto(server.base_url + "/ui/?has_errors=true")
    assert list_keys(page) == [KEY]
    page.goto(server.base_url + "/ui/?q=filler-00")
    assert len(list_keys(page)) == 10
    page.goto(server.base_url + "/ui/?q=100%25")  # LIKE wildcards are literal
    assert list_keys(page) == []
    page.goto(server.base_url + "/ui/?since=2100-01-01T00:00")
    assert list_keys(page) == []
    page.goto(server.base_url + "/ui/?since=yesterday")
    assert "since: not an RFC 3339 time" in page.inner_text("h1")
    answer = page.goto(server.base_url + "/ui/?cursor=not-ours")
    assert answer is not None and answer.status == 400
    assert "not a cursor this API issued" in page.inner_text("h1")
    answer = page.goto(server.base_url + "/ui/conversations/no-such")
    assert answer is not None and answer.status == 404 and "no-such" in page.inner_text("h1")
    page.goto(server.base_url + "/ui/?until=2100-01-01T00:00&service=tooltrail-capture-pydantic-ai")
    assert list_keys(page) == [KEY]
    page.close()


def test_hostile_arguments_render_as_text(server: Server, browser: Any, shots: Path) -> None:
    page = browser.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(server.base_url + "/ui/conversations/hostile-1")
    text = page.inner_text("main")
    assert "<script>window.__pwned = 1</script>" in text
    assert page.locator("main script, main img").count() == 0
    assert page.evaluate("window.__pwned") is None and dialogs == []
    assert "<b>bold</b>" in page.inner_text("section.verdict")  # the expectation's value too
    folded = page.locator("article.call details:not(.raw)")  # the long result, folded
    assert folded.count() == 1 and not folded.locator("pre").is_visible()
    folded.locator("summary").focus()
    page.keyboard.press("Enter")
    assert folded.locator("pre").is_visible() and LONG.strip() in folded.inner_text()
    page.screenshot(path=str(shots / "hostile.png"), full_page=True)
    page.goto(server.base_url + "/ui/conversations/unexecuted-1")
    never = page.locator("article.call", has_text="approve_refund")
    assert "requested, never executed" in never.inner_text()
    assert "never executed" not in page.locator("article.call", has_text="lookup").inner_text()
    page.goto(server.base_url + "/ui/errors")
    assert page.inner_text("h1") == "Recent ingest errors"
    with server.client() as client:
        (error,) = client.get("/api/v1/ingest/errors").json()["data"]
    row = page.locator("main tbody tr").inner_text()
    assert error["message"] in row and error["kind"] in row
    page.goto(server.base_url + "/ui/expectations")
    listed = page.locator("main tbody td:first-child a").all_inner_texts()
    assert sorted(listed) == ["asks-the-weather", "hostile", "weather-then-time"]
    page.goto(server.base_url + "/ui/jobs")
    assert "weather-then-time" in page.inner_text("main")  # the job its creation queued
    assert "done" in page.inner_text("main")
    page.close()


def report_items(server: Server, key: str) -> list[dict[str, Any]]:
    """What `tooltrail check --html` hands render_report, read over REST."""
    with server.client() as client:
        conversation = client.get(f"/api/v1/conversations/{key}").json()
        items = []
        for result in client.get(f"/api/v1/conversations/{key}/results").json()["data"]:
            exp = client.get(f"/api/v1/expectations/{result['expectation']}",
                             params={"version": result["expectation_version"]}).json()
            items.append({"expectation": exp["expectation"], "conversation": conversation,
                          "result": result})
    return items


def test_report_opens_offline(server: Server, browser: Any, shots: Path,
                              tmp_path: Path) -> None:
    items = report_items(server, KEY) + report_items(server, "hostile-1")
    assert len(items) == 3
    path = tmp_path / "report.html"
    path.write_text(render_report("suite <nightly>", items), encoding="utf-8")
    context = browser.new_context(offline=True)
    requests: list[str] = []
    context.on("request", lambda r: requests.append(r.url))
    page = context.new_page()
    page.goto(path.as_uri())
    assert requests == [path.as_uri()]  # nothing but the file itself
    assert page.title() == "suite <nightly>"
    font = page.evaluate("getComputedStyle(document.body).fontFamily")
    assert font.startswith("system-ui")  # the inline stylesheet applies, quotes and all
    verdicts = page.locator("section.verdict")
    assert verdicts.count() == 3
    body = page.inner_text("main")
    for item in items:
        assert item["result"]["reason"] in body or item["result"]["passed"]
        for d in item["result"]["differences"]:
            assert d["message"] in body
    assert "1 passed" in body and "2 failed" in body
    failing = page.locator("section.verdict", has_text="weather-then-time")
    statuses = failing.locator("table.diff tbody tr").evaluate_all(
        "rows => rows.map(r => r.dataset.status)")
    assert statuses[:3] == ["paired", "argument", "missing"]
    assert page.locator("script").count() == 0 and page.evaluate("window.__pwned") is None
    page.screenshot(path=str(shots / "report.png"), full_page=True)
    context.close()


def test_signin_with_keys(tmp_path: Path, browser: Any) -> None:
    keys = "ingest:ingest-key,read:read-key,admin-key"
    with running_server(f"sqlite:///{tmp_path / 'keys.db'}",
                        env={"TOOLTRAIL_API_KEYS": keys}) as s:
        base = s.base_url
        bare = httpx.get(base + "/ui/conversations/x", follow_redirects=False)
        assert bare.status_code == 303 and bare.headers["location"].startswith("/ui/signin")
        assert httpx.get(base + "/ui/static/ui.css").status_code == 200
        for target in ("//evil.example/ui/", "https://evil.example/", "/api/v1/results"):
            signed = httpx.post(base + "/ui/signin", data={"key": "read-key", "next": target})
            assert signed.status_code == 303 and signed.headers["location"] == "/ui/", target
        context = browser.new_context()
        page = context.new_page()
        page.goto(base + "/ui/errors")
        assert "/ui/signin" in page.url and page.inner_text("h1") == "Sign in"
        page.get_by_label("API key").fill("ingest-key")
        page.get_by_label("API key").press("Enter")
        assert "may not read" in page.inner_text("[role=alert]")
        page.get_by_label("API key").fill("wrong")
        page.get_by_role("button", name="Sign in").click()
        assert "not valid" in page.inner_text("[role=alert]")
        page.get_by_label("API key").fill("read-key")
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url("**/ui/errors")
        assert page.inner_text("h1") == "Recent ingest errors"
        (cookie,) = context.cookies()
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        assert cookie["value"] == "read-key" and cookie["path"] == "/ui"
        # the cookie opens pages only: the API still wants the Authorization header
        cookies = {"tooltrail_key": "read-key"}
        assert httpx.get(base + "/api/v1/conversations", cookies=cookies).status_code == 401
        assert httpx.get(base + "/ui/jobs", cookies=cookies).status_code == 200
        # pinning as golden: the read key of the session may look, only an admin key saves
        assert httpx.post(base + "/ui/golden", cookies=cookies, data={
            "key": "x", "project": "default", "body": json.dumps({"id": "g", "calls": []}),
            "admin_key": "read-key"}).status_code == 403
        page.get_by_role("button", name="Sign out").click()
        page.goto(base + "/ui/")
        assert "/ui/signin" in page.url
        context.close()


def test_pin_as_golden(server: Server, browser: Any, shots: Path) -> None:
    """Last in the module: it adds an expectation the other tests do not expect."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(server.base_url + "/ui/conversations/hostile-1")
    page.get_by_role("link", name="Pin as golden…").click()
    page.wait_for_url("**/ui/golden?*")
    shown = page.inner_text("pre.golden")
    assert "match: strict" in shown and "<script>window.__pwned = 1</script>" in shown
    assert page.locator("main script, main img").count() == 0
    page.screenshot(path=str(shots / "golden.png"), full_page=True)
    page.get_by_role("button", name="Save expectation hostile-1").click()
    page.wait_for_url("**/ui/expectations/hostile-1")
    with server.client() as client:
        saved = client.get("/api/v1/expectations/hostile-1").json()["expectation"]
    assert saved["calls"][0]["arguments"] == {"q": HOSTILE}
    assert saved["selector"] == {"conversation": "hostile-1"}
    page.goto(server.base_url + "/ui/golden?key=plain-1")  # a conversation with no content
    shown = page.inner_text("pre.golden")
    assert "name: lookup" in shown and "conversation: plain-1" in shown
    page.goto(server.base_url + "/ui/golden?key=hostile-1")  # a second save: the REST 409
    page.get_by_role("button", name="Save expectation hostile-1").click()
    assert "already" in page.inner_text("[role=alert]") or "exists" in page.inner_text(
        "[role=alert]")
    page.close()
