"""The compiled walk (`collector/extract/_wire.c`) against the pure-Python reference: whole
extraction outcomes (calls, traces and turns, keys, rejected and unextracted spans, span count,
lossy counts, or the exception) must be identical on every capture, the conventions' unit
cases, the seeded random corpus and the fuzz suite's mutated bodies.

Ingest hands the compiled walk the body as received when it parsed whole (`raw`), so each
comparison also runs the compiled walk over the bytes the pure walk's request was parsed from:
captures as stored, the corpus re-encoded as clients may send it (`wire_variants`: unknown
fields, repeated singular fields, merged messages, other wire types), and mutated bodies."""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.collector.durability.test_fuzz_ingest import (
    SEED_PB,
    json_values,
    mutated_bytes,
    mutated_json,
)
from tests.collector.extract import extract_corpus as corpus
from tests.collector.extract import wire_variants
from tooltrail.collector.errors import InvalidPayload
from tooltrail.collector.extract import ExtractOptions, decoding, extract, otlp
from tooltrail.collector.extract.decoding import noting
from tooltrail.collector.ingest import Pipeline, run_pipeline
from tooltrail.collector.model import ToolCall
from tooltrail.collector.receivers.codec import JSON, PROTOBUF, decode_body
from tooltrail.collector.store.rows import prepare

pytestmark = pytest.mark.skipif(otlp.COMPILED_WALK is None and os.environ.get("CI") != "true",
                                reason="the compiled walk is not built")


def test_ci_runs_the_compiled_walk() -> None:
    """CI builds the extension (`pip install -e .` in scripts/test): it must be what runs."""
    if os.environ.get("TOOLTRAIL_PURE_PYTHON") == "1":
        pytest.skip("TOOLTRAIL_PURE_PYTHON=1 asks for the pure walk")
    assert otlp.COMPILED_WALK is not None, otlp.walk_description()
    assert otlp.span_views is otlp.COMPILED_WALK
    assert decoding.decode_json is otlp.COMPILED_JSON
    assert otlp.tool_call is otlp.COMPILED_CALL


def test_the_compiled_call_is_the_dataclass_s() -> None:
    """`otlp.tool_call` makes what calling ToolCall with the same fields makes: the same type,
    equal, every field the same object, hashed alike, and still frozen."""
    values = [f"v{i}" for i in range(len(otlp.TOOL_CALL_FIELDS))]
    made = otlp.COMPILED_CALL(*values)  # type: ignore[misc]
    called = ToolCall(*values)
    assert type(made) is ToolCall and made == called and hash(made) == hash(called)
    assert all(getattr(made, f) is v for f, v in zip(otlp.TOOL_CALL_FIELDS, values, strict=True))
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        otlp.COMPILED_CALL(*values[:-1])  # type: ignore[misc]


def test_an_extension_older_than_its_source_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """An editable install not rebuilt since `_wire.c` changed: its module lacks what the
    source configures. The reference walk runs, and the log line says to rebuild."""
    import sys
    import types

    stale = types.ModuleType("tooltrail.collector.extract._wire")
    stale.configure = lambda *args: None  # type: ignore[attr-defined]  # no configure_json
    monkeypatch.setitem(sys.modules, "tooltrail.collector.extract._wire", stale)
    monkeypatch.setattr(sys.modules["tooltrail.collector.extract"], "_wire", stale, raising=False)
    monkeypatch.delenv("TOOLTRAIL_PURE_PYTHON", raising=False)
    monkeypatch.setattr(otlp, "_STALE", False)
    assert otlp._compiled() is None and otlp._STALE
    monkeypatch.setattr(otlp, "_STALE", False)
    from tooltrail.collector.receivers import otlpjson
    assert otlpjson._compiled_run() is None and otlp._STALE  # no configure_otlpjson either
    monkeypatch.setattr(otlp, "COMPILED_WALK", None)
    assert "older than its source" in otlp.walk_description()


def _outcome(request: ExportTraceServiceRequest, options: ExtractOptions,
             raw: bytes | None) -> str:
    """`corpus.outcome`, with the request's bytes as received handed on (`extract`'s raw)."""
    if raw is None:
        return corpus.outcome(request, options)
    try:
        result = corpus.canonical(extract(request, options, raw))
    except Exception as exc:  # an outcome like any other, compared as such
        result = {"raises": type(exc).__name__}
    return json.dumps(result, ensure_ascii=True, separators=(",", ":"))


def _both(monkeypatch: pytest.MonkeyPatch, request: ExportTraceServiceRequest,
          options: ExtractOptions, raw: bytes | None = None) -> tuple[str, str, str]:
    """(pure, compiled over the request serialised, compiled over `raw`) outcomes; without
    `raw`, the last is the second again."""
    walks: dict[str, tuple[Callable[..., Any], Callable[[str], Any], Callable[..., Any]]] = {
        "pure": (otlp.pure_span_views, decoding.pure_decode_json, ToolCall),
        "compiled": (otlp.COMPILED_WALK, otlp.COMPILED_JSON,  # type: ignore[dict-item]
                     otlp.COMPILED_CALL)}
    out = []
    for name, body in (("pure", None), ("compiled", None), ("compiled", raw)):
        monkeypatch.setattr(otlp, "span_views", walks[name][0])
        monkeypatch.setattr(decoding, "decode_json", walks[name][1])
        monkeypatch.setattr(otlp, "tool_call", walks[name][2])
        out.append(_outcome(request, options, body))
    return out[0], out[1], out[2]


@pytest.mark.parametrize("path", corpus.capture_files(), ids=lambda p: str(p.relative_to(
    corpus.CAPTURES)))
def test_captures(monkeypatch: pytest.MonkeyPatch, path: Any) -> None:
    request = corpus.read_request(path)
    raw = path.read_bytes() if path.suffix == ".pb" else None  # the body as it was sent
    for _, options in corpus.CAPTURE_OPTIONS:
        pure, compiled, as_sent = _both(monkeypatch, request, options, raw)
        assert compiled == pure
        assert as_sent == pure


def test_random_corpus(monkeypatch: pytest.MonkeyPatch) -> None:
    for index in range(1500):
        request, options = corpus.request(random.Random(f"compiled:{index}"))
        pure, compiled, _ = _both(monkeypatch, request, options)
        assert compiled == pure, f"corpus request {index}"


def _parsed_whole(body: bytes) -> ExportTraceServiceRequest | None:
    """The request a protobuf body parses to whole (no span salvaged), as ingest decodes it."""
    try:
        request, refused = decode_body(body, PROTOBUF, None, 1 << 24)
    except InvalidPayload:
        return None
    return None if refused else request  # type: ignore[no-any-return]


def test_corpus_as_clients_send_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The corpus re-encoded (unknown fields, merged and replaced fields, other wire types):
    the compiled walk over those bytes equals the pure walk over what they parse to."""
    parsed = 0
    for index in range(800):
        rng = random.Random(f"variant:{index}")
        request, options = corpus.request(rng)
        body = wire_variants.variant(request.SerializeToString(), rng,
                                     rate=rng.choice((0.05, 0.15, 0.4)))
        again = _parsed_whole(body)
        if again is None:
            continue
        parsed += 1
        pure, _, as_sent = _both(monkeypatch, again, options, body)
        assert as_sent == pure, f"variant {index}"
    # the variants are valid protobuf: most parse whole (the corpus's deepest values are past
    # the parser's depth limit, re-encoded or not, and unknown groups add to their depth)
    assert parsed > 550


def test_variants_reach_the_merges(monkeypatch: pytest.MonkeyPatch) -> None:
    """The variants do what they are for: some parse to another request than the original
    (a merged or replaced value), and the walk items still agree."""
    differ = 0
    for index in range(300):
        rng = random.Random(f"reach:{index}")
        request, _ = corpus.request(rng)
        body = wire_variants.variant(request.SerializeToString(), rng, rate=0.3)
        again = _parsed_whole(body)
        if again is None:
            continue
        differ += again != request
        with noting() as pure_notes:
            pure = otlp.pure_span_views(again)
        with noting() as compiled_notes:
            compiled = otlp.COMPILED_WALK(again, body)  # type: ignore[misc]
        assert corpus.canonical(compiled) == corpus.canonical(pure), f"variant {index}"
        assert compiled_notes == pure_notes, f"variant {index}"
    assert differ > 30


def test_ingest_hands_the_body_to_the_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    """run_pipeline gives the walk the body when it parsed whole, and nothing otherwise (a
    compressed body is not the serialised request)."""
    seen: list[bytes | None] = []
    walk = otlp.COMPILED_WALK

    def spy(request: ExportTraceServiceRequest, raw: bytes | None = None) -> Any:
        seen.append(raw)
        return walk(request, raw)  # type: ignore[misc]

    monkeypatch.setattr(otlp, "span_views", spy)
    pipeline = Pipeline(decode=decode_body, prepare=prepare, options=ExtractOptions(),
                        limit=1 << 24)
    prepared, size, _ = run_pipeline(pipeline, SEED_PB, PROTOBUF, None)
    assert seen == [SEED_PB] and size == len(SEED_PB) and prepared.calls
    run_pipeline(pipeline, gzip.compress(SEED_PB), PROTOBUF, "gzip")
    assert seen[1] is None


def test_walk_items_are_equal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Below extraction: the same views (resource decoded once: one dict per resource)."""
    assert otlp.COMPILED_WALK is not None
    for index in range(300):
        request, _ = corpus.request(random.Random(f"items:{index}"))
        pure = otlp.pure_span_views(request)
        compiled = otlp.COMPILED_WALK(request)
        assert corpus.canonical(compiled) == corpus.canonical(pure), f"request {index}"
        assert len({id(v.resource) for v, _ in compiled if v is not None}) == len(
            {id(v.resource) for v, _ in pure if v is not None})


def _decoded(body: bytes, media: str) -> tuple[ExportTraceServiceRequest | None, bool]:
    """(the request, whether it parsed whole: no span salvaged)."""
    try:
        request, refused = decode_body(body, media, None, 1 << 24)
    except InvalidPayload:
        return None, False
    return request, not refused


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(body=mutated_bytes(SEED_PB))
def test_mutated_protobuf(body: bytes) -> None:
    request, whole = _decoded(body, PROTOBUF)
    if request is not None:
        _compare_without_fixture(request, body if whole else None)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(body=mutated_json())
def test_mutated_json(body: bytes) -> None:
    request, _ = _decoded(body, JSON)
    if request is not None:
        _compare_without_fixture(request, None)


def _compare_without_fixture(request: ExportTraceServiceRequest, raw: bytes | None) -> None:
    with pytest.MonkeyPatch.context() as patch:
        pure, compiled, as_sent = _both(patch, request, ExtractOptions(), raw)
    assert compiled == pure
    assert as_sent == pure


# JSON texts: values of every kind, the literals Python's json reads beyond JSON (NaN,
# Infinity), numbers at and past the ranges, escapes (surrogates joined or lone, NUL), and
# near misses of each (a fraction or exponent without digits, trailing commas, control
# characters, bad escapes, extra data)
JSON_PIECES = ("NaN", "-Infinity", "Infinity", "1e400", "-1e400", "1.5e-400",
               "18446744073709551615", "18446744073709551616", "-9223372036854775808",
               "-9223372036854775809",
               "123456789012345678", "1234567890123456789", "-0", "-0.0", "0.1", "1E5", "1e+5",
               "2.", "1e", "1.e3", "01", "-", "--1", '"\\ud83d\\ude00"', '"\\ud800"',
               '"\\udc00\\ud800"', '"\\ud800\\u0041"', '"\\u0000"', '"\\u00e9\\n\\t\\/"',
               '"\\x"', '"\\u12"', '"a\tb"', '"é日本"', "[1,]", '{"a":1,}', '{"a":1,"a":2}',
               '{"a":{"b":1,"b":[NaN]},"a":3}', "[1 2]", "{1:2}", "nul", "true false", "  []  ",
               "[\n1\r,\t2 ]", '{"k" : [ ] , "j":{}}', '"unterminated', "[[[[]]]]", "{}", "")


@st.composite
def json_texts(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        text = json.dumps(draw(json_values), ensure_ascii=draw(st.booleans()),
                          indent=draw(st.sampled_from([None, 1])))
    else:
        parts = draw(st.lists(st.sampled_from(JSON_PIECES), min_size=1, max_size=4))
        glue = draw(st.sampled_from([",", ", ", ":", " "]))
        text = glue.join(parts)
        wrap = draw(st.sampled_from(["{}", "[]", "{\"k\": []}", "%s"]))
        if wrap == "{}":
            text = "{" + ", ".join(f'"k{i}": {p}' for i, p in enumerate(parts)) + "}"
        elif wrap == "[]":
            text = "[" + text + "]"
        elif wrap != "%s":
            text = '{"k": [' + text + "]}"
    for _ in range(draw(st.integers(0, 2))):  # a few characters changed, added or removed
        at = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["insert", "delete"]))
        if op == "insert":
            text = text[:at] + draw(st.sampled_from(list('"\\{}[],:0-.eE \x00\x1fuéN'))) + text[at:]
        else:
            text = text[:at] + text[at + 1:]
    return text


def _decoded_json(decode: Callable[[str], Any], text: str) -> tuple[Any, Any]:
    with noting() as notes:
        try:
            value: Any = corpus.canonical(decode(text))
        except (ValueError, RecursionError) as exc:
            value = {"raises": type(exc).__name__}
    return value, sorted(notes.items())


@settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=json_texts())
def test_json_decoding_is_the_reference(text: str) -> None:
    """The compiled JSON decoding against `decoding.pure_decode_json`: the same value (types,
    float bits, key order), the same error, the same notes."""
    assert otlp.COMPILED_JSON is not None
    assert _decoded_json(otlp.COMPILED_JSON, text) == _decoded_json(
        decoding.pure_decode_json, text)


def test_json_decoding_corpus_texts() -> None:
    """Every JSON text the corpus's attribute values hold, decoded both ways alike."""
    assert otlp.COMPILED_JSON is not None
    texts: set[str] = set()
    for index in range(400):
        request, _ = corpus.request(random.Random(f"json:{index}"))
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    texts.update(kv.value.string_value.strip() for kv in span.attributes
                                 if kv.value.string_value.strip()[:1] in ('{', '[', '"'))
    assert len(texts) > 500
    for text in sorted(texts):
        assert _decoded_json(otlp.COMPILED_JSON, text) == _decoded_json(
            decoding.pure_decode_json, text), text[:200]
