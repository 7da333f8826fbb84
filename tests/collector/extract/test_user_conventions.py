"""A conventions file (docs/conventions.md): a framework no built-in knows is extracted once a
few lines say where its fields are; a bad file is refused with one line naming entry and field.

The spans come from the real OpenTelemetry SDK, named and attributed as a made-up framework
("acme") would: nothing in them is a key any built-in convention reads.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.server import running_server
from tests.spans import capture, to_otlp_json, to_request
from tooltrail.collector.cli import main
from tooltrail.collector.extract import ExtractOptions, extract
from tooltrail.collector.extract.conventions import ConventionsError, read_conventions
from tooltrail.collector.model import Batch

ACME = """\
conventions:
  - name: acme
    match: {span_name: '^acme\\.tool\\.(.+)$', has_attributes: [acme.args]}
    arguments: acme.args
    result: {attribute: acme.out, path: value}
    call_id: acme.call
    conversation_key: acme.session
"""


def acme_request(conversation: str = "acme-7"):  # type: ignore[no-untyped-def]
    tp, exporter = capture()
    tracer = tp.get_tracer("acme.agent")
    with tracer.start_as_current_span("acme.run", attributes={"acme.session": conversation}):
        for i, (city, temp) in enumerate([("Paris", 21), ("Oslo", 4)]):
            with tracer.start_as_current_span("acme.tool.get_weather", attributes={
                "acme.session": conversation, "acme.call": f"c{i}",
                "acme.args": json.dumps({"city": city}),
                "acme.out": json.dumps({"value": {"temp": temp}}),
            }):
                pass
    return to_request(exporter.get_finished_spans())


def calls(batch: Batch) -> list[tuple[str, object, object, str | None]]:
    return [(c.name, c.arguments, c.result, c.call_id) for c in batch.calls]


def test_unknown_framework_yields_no_call_without_a_file() -> None:
    assert calls(extract(acme_request())) == []


def test_a_conventions_file_of_a_few_lines_extracts_it(tmp_path: Path) -> None:
    assert len(ACME.splitlines()) < 15
    path = tmp_path / "acme.yaml"
    path.write_text(ACME)
    options = ExtractOptions(conventions=read_conventions(path))
    batch = extract(acme_request(), options)
    assert calls(batch) == [("get_weather", {"city": "Paris"}, {"temp": 21}, "c0"),
                            ("get_weather", {"city": "Oslo"}, {"temp": 4}, "c1")]
    assert {c.convention for c in batch.calls} == {"acme"}
    assert {t.conversation_key for t in batch.traces} == {"acme-7"}


def test_a_match_on_the_instrumentation_scope(tmp_path: Path) -> None:
    """`scope` tells one instrumentation's spans from another's that set the same attributes."""
    path = tmp_path / "scoped.yaml"
    for scope, found in (("acme.agent", 2), ("another.instrumentation", 0)):
        path.write_text(ACME.replace("has_attributes: [acme.args]",
                                     f"has_attributes: [acme.args], scope: {scope}"))
        batch = extract(acme_request(), ExtractOptions(conventions=read_conventions(path)))
        assert len(batch.calls) == found


@pytest.mark.parametrize(("text", "named"), [
    ("conventions:\n  - name: acme\n    match: {span_name: '(('}\n",
     "conventions[0] (acme).match.span_name"),
    ("conventions:\n  - name: acme\n", "conventions[0] (acme).match"),
    ("conventions:\n  - name: acme\n    match: {span_name: x}\n    argumnets: a\n",
     "conventions[0] (acme).argumnets"),
    ("conventions:\n  - match: {span_name: x}\n", "conventions[0].name"),
    ("conventions:\n  - name: acme\n    match: {scope: ''}\n",
     "conventions[0] (acme).match.scope"),
])
def test_a_bad_file_names_the_entry_and_field(tmp_path: Path, text: str, named: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConventionsError) as caught:
        read_conventions(path)
    message = str(caught.value)
    assert named in message and "bad.yaml" in message and "\n" not in message


def test_extract_and_check_refuse_a_bad_file_with_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("conventions:\n  - name: acme\n")
    spans = tmp_path / "spans.json"
    spans.write_text(json.dumps(to_otlp_json(acme_request())))
    suite = tmp_path / "suite.yaml"
    suite.write_text("name: acme\nexpectations:\n  - id: weather\n"
                     "    calls: [{name: get_weather}]\n")
    for argv in (["extract", str(spans), "--conventions", str(bad)],
                 ["check", str(suite), str(spans), "--conventions", str(bad)],
                 ["serve", "--conventions", str(bad), "--http-port", "0", "--grpc-port", "0",
                  "--database-url", f"sqlite:///{tmp_path}/never.db"]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "conventions[0] (acme).match" in err[0], err


def test_check_scores_the_file_convention(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conventions = tmp_path / "acme.yaml"
    conventions.write_text(ACME)
    spans = tmp_path / "spans.json"
    spans.write_text(json.dumps(to_otlp_json(acme_request())))
    suite = tmp_path / "suite.yaml"
    suite.write_text("name: acme\nexpectations:\n  - id: weather\n"
                     "    calls: [{name: get_weather, arguments: {city: Paris}}]\n")
    assert main(["check", str(suite), str(spans)]) == 1  # no call without the file
    capsys.readouterr()
    assert main(["check", str(suite), str(spans), "--conventions", str(conventions)]) == 0


@pytest.mark.server_process
def test_serve_extracts_the_file_convention(tmp_path: Path, database_url: str) -> None:
    """`serve --conventions FILE`: the acme spans, sent as an OTLP exporter sends them, are
    stored as calls of the file's convention, keyed by its conversation attribute."""
    conventions = tmp_path / "acme.yaml"
    conventions.write_text(ACME)
    with running_server(database_url, "--conventions", str(conventions)) as server, \
            server.client() as client:
        answer = client.post("/v1/traces", content=acme_request().SerializeToString(),
                             headers={"content-type": "application/x-protobuf"})
        assert answer.status_code == 200, answer.text
        found = server.wait_for("/api/v1/conversations/acme-7", lambda c: bool(c["turns"]))
    assert [(c["name"], c["arguments"], c["result"], c["call_id"])
            for c in found["turns"][0]["tool_calls"]] == [
        ("get_weather", {"city": "Paris"}, {"temp": 21}, "c0"),
        ("get_weather", {"city": "Oslo"}, {"temp": 4}, "c1")]
