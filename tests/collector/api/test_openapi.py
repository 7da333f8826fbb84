"""The OpenAPI document describes the API as it answers (issue 11 item 12): a valid OpenAPI
3.1 document (openapi-spec-validator), the 422 the server sends documented as sent, clean
operationIds, a bearer scheme with each operation's roles, typed times, job statuses and
differences — for routes added later too — and /docs served offline from the server."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, get_args
from urllib.parse import urljoin

import jsonschema
import pytest
from fastapi import APIRouter
from openapi_spec_validator import validate
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from pydantic import BaseModel

from tests.server import Server, running_server
from tests.spans import ToolStep, agent_turn, provider
from tooltrail.collector.api.app import create_app
from tooltrail.collector.config import Settings
from tooltrail.matcher.result import DifferenceKind

TIME_FIELDS = {"first_seen", "last_seen", "since", "until", "start", "at"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    db = tmp_path_factory.mktemp("openapi") / "db.sqlite"
    with running_server(f"sqlite:///{db}") as s:
        tp = provider(OTLPSpanExporter(endpoint=f"{s.base_url}/v1/traces"))
        agent_turn(tp, "doc-a", [ToolStep("lookup", {"id": 1})])
        tp.shutdown()
        with s.client() as client:
            created = client.post("/api/v1/expectations", json={
                "id": "doc", "calls": [{"name": "lookup", "arguments": {"id": 2}},
                                       {"name": "refund"}]})
            assert created.status_code == 201
        s.wait_for("/api/v1/results", lambda b: len(b["data"]) == 1)
        yield s


@pytest.fixture(scope="module")
def doc(server: Server) -> dict[str, Any]:
    with server.client() as client:
        found: dict[str, Any] = client.get("/openapi.json").json()
    return found


def operations(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            yield method, path, operation


def answer_schema(doc: dict[str, Any], path: str, method: str, status: str) -> dict[str, Any]:
    """The documented JSON schema of an answer, resolvable against the document's components."""
    schema = doc["paths"][path][method]["responses"][status]["content"]["application/json"]
    return {**schema["schema"], "components": doc["components"]}


def test_document_is_valid_openapi(doc: dict[str, Any]) -> None:
    assert doc["openapi"].startswith("3.1")
    validate(doc)  # raises on any violation of the OpenAPI 3.1 schema


def test_422_is_documented_as_answered(server: Server, doc: dict[str, Any]) -> None:
    assert "HTTPValidationError" not in str(doc) and "ValidationError" not in doc[
        "components"]["schemas"]
    with_422 = [(m, p) for m, p, op in operations(doc) if "422" in op["responses"]]
    assert len(with_422) >= 10
    for method, path in with_422:
        schema = doc["paths"][path][method]["responses"]["422"]["content"]["application/json"]
        assert schema["schema"] == {"$ref": "#/components/schemas/InvalidRequestBody"}
    with server.client() as client:
        answer = client.get("/api/v1/conversations", params={"limit": 0})
        bad_body = client.post("/api/v1/jobs", json={"nope": 1})
    for response, path, method in ((answer, "/api/v1/conversations", "get"),
                                   (bad_body, "/api/v1/jobs", "post")):
        assert response.status_code == 422
        jsonschema.validate(response.json(), answer_schema(doc, path, method, "422"))


def test_operation_ids_are_the_route_names(doc: dict[str, Any]) -> None:
    ids = [op["operationId"] for _, _, op in operations(doc)]
    assert len(ids) == len(set(ids))
    assert {"list_conversations", "get_conversation", "create_expectation", "list_results",
            "create_job", "score_calls"} <= set(ids)
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*", i) and "api_v1" not in i for i in ids), ids


def test_bearer_scheme_and_the_roles_each_operation_needs(doc: dict[str, Any]) -> None:
    assert doc["components"]["securitySchemes"]["bearer"]["type"] == "http"
    assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    security = {(m, p): op.get("security") for m, p, op in operations(doc)}
    assert security[("get", "/healthz")] is None and security[("get", "/metrics")] is None
    read = [{"bearer": ["read"]}, {"bearer": ["admin"]}]
    assert security[("get", "/api/v1/conversations")] == read
    assert security[("post", "/api/v1/score")] == read
    assert security[("post", "/api/v1/expectations")] == [{"bearer": ["admin"]}]
    assert security[("delete", "/api/v1/jobs/{id}")] == [{"bearer": ["admin"]}]
    for (method, path), needs in security.items():
        if path.startswith("/api/"):
            assert needs, (method, path)
            responses = doc["paths"][path][method]["responses"]
            assert {"401", "403"} <= set(responses)


def _nullable(prop: dict[str, Any]) -> dict[str, Any]:
    """The non-null branch of an `X | None` property."""
    branches = [b for b in prop.get("anyOf", [prop]) if b.get("type") != "null"]
    assert len(branches) == 1, prop
    return branches[0]


def test_times_statuses_and_differences_are_typed(doc: dict[str, Any]) -> None:
    schemas = doc["components"]["schemas"]
    times = 0
    for name, schema in schemas.items():
        for field, prop in schema.get("properties", {}).items():
            if field in TIME_FIELDS or field.endswith(("_at", "_time")):
                assert _nullable(prop) == {"type": "string", "format": "date-time"}, (name, field)
                times += 1
    assert times >= 15
    assert set(schemas["JobOut"]["properties"]["status"]["enum"]) == {
        "queued", "running", "done", "failed", "cancelled"}
    differences = schemas["ResultOut"]["properties"]["differences"]
    assert differences["items"] == {"$ref": "#/components/schemas/DifferenceOut"}
    difference = schemas["DifferenceOut"]
    assert difference["properties"]["kind"]["enum"] == list(get_args(DifferenceKind))
    assert set(difference["required"]) >= {"kind", "message", "turn"}


def test_answers_match_the_typed_schemas(server: Server, doc: dict[str, Any]) -> None:
    with server.client() as client:
        results = client.get("/api/v1/conversations/doc-a/results").json()
        job = client.post("/api/v1/jobs", json={}).json()["id"]
        progress = client.get(f"/api/v1/jobs/{job}").json()
    (result,) = results["data"]
    assert {d["kind"] for d in result["differences"]} == {"argument", "missing"}
    jsonschema.validate(results, answer_schema(
        doc, "/api/v1/conversations/{key}/results", "get", "200"))
    jsonschema.validate(progress, answer_schema(doc, "/api/v1/jobs/{id}", "get", "200"))


class Widget(BaseModel):
    name: str


def test_the_mechanisms_apply_to_routes_added_later(tmp_path: Path) -> None:
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'db.sqlite'}"))
    router = APIRouter(prefix="/api/v1/widgets")

    @router.get("")
    def list_widgets(limit: int = 10) -> list[Widget]:
        return []

    @router.post("", status_code=201)
    def create_widget(body: Widget) -> Widget:
        return body

    app.include_router(router)
    later = app.openapi()
    validate(later)
    listed, created = later["paths"]["/api/v1/widgets"]["get"], later["paths"][
        "/api/v1/widgets"]["post"]
    assert (listed["operationId"], created["operationId"]) == ("list_widgets", "create_widget")
    assert listed["security"] == [{"bearer": ["read"]}, {"bearer": ["admin"]}]
    assert created["security"] == [{"bearer": ["admin"]}]
    for operation in (listed, created):
        assert operation["responses"]["422"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/InvalidRequestBody"}
    assert "HTTPValidationError" not in str(later)


class _References(HTMLParser):
    """Every src and href of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found += [v for k, v in attrs if k in ("src", "href") and v]


def test_docs_load_offline_from_the_server(server: Server) -> None:
    with server.client() as client:
        page = client.get("/docs")
        assert page.status_code == 200 and "SwaggerUIBundle" in page.text
        assert "://" not in page.text  # no external URL at all
        parser = _References()
        parser.feed(page.text)
        (openapi_url,) = re.findall(r"url: '([^']+)'", page.text)
        todo = [urljoin(f"{server.base_url}/docs", ref) for ref in [*parser.found, openapi_url]]
        fetched: set[str] = set()
        while todo:
            url = todo.pop()
            if url in fetched:
                continue
            fetched.add(url)
            assert url.startswith(server.base_url), url
            asset = client.get(url)
            assert asset.status_code == 200 and asset.content, url
            if url.endswith((".css", ".js")):  # what the assets load in turn
                refs = re.findall(r"sourceMappingURL=(\S+?)(?:\*/|\s|$)", asset.text)
                if url.endswith(".css"):
                    refs += [r for r in re.findall(r"url\(\"?([^\")]+)", asset.text)
                             if not r.startswith("data:")]
                todo += [urljoin(url, r) for r in refs]
    assert {u.rsplit("/", 1)[1] for u in fetched} >= {
        "swagger-ui-bundle.js", "swagger-ui.css", "swagger-ui.css.map", "openapi.json",
        "favicon-32x32.png"}
