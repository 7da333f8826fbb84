"""The fast OTLP/JSON path (collector.receivers.otlpjson) against protobuf's json_format, as
codec decoded every OTLP/JSON body before it: on real captures, the fuzz corpus and a seeded
random corpus of valid and broken requests of every signal, `decode_body` gives the same
message (serialized bytes equal) and the same rejected spans, or the same refusal. Every test
runs with the converters applied in Python (`pure_run`) and, when the extension is built, in C
(`_wire.convert`), which must also give the same keyword arguments as Python, or both `Defer`."""

from __future__ import annotations

import base64
import json
import os
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings

from tests.collector.durability.test_fuzz_ingest import mutated_json
from tooltrail.collector.errors import InvalidPayload
from tooltrail.collector.extract import otlp
from tooltrail.collector.receivers import otlpjson
from tooltrail.collector.receivers.codec import JSON, SIGNALS, decode_body

CAPTURES = Path(__file__).parents[2] / "captures"
LIMIT = 50_000_000
RUNS = {"pure": otlpjson.pure_run}
if otlpjson.COMPILED_RUN is not None:
    RUNS["compiled"] = otlpjson.COMPILED_RUN


@pytest.fixture(autouse=True, params=sorted(RUNS))
def run(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """How the converters are applied in this test."""
    monkeypatch.setattr(otlpjson, "run", RUNS[request.param])
    yield request.param


def test_ci_runs_the_compiled_converters() -> None:
    """With the extension built (CI builds it), its converters are what decodes."""
    if os.environ.get("TOOLTRAIL_PURE_PYTHON") == "1" or otlp.COMPILED_WALK is None:
        pytest.skip("the pure-Python path was asked for, or the extension is not built")
    assert otlpjson.COMPILED_RUN is not None


def converted(body: bytes, signal: str, apply: Any) -> tuple[Any, ...]:
    """The converters' answer on `body`: its keyword arguments, or what refused it."""
    try:
        data = json.loads(body)
    except ValueError:
        return ("not JSON",)
    kind = SIGNALS[signal]
    try:
        return ("converted", apply(otlpjson.converter(kind.request.DESCRIPTOR, kind.id_paths),
                                   data, 1))
    except Exception as exc:  # the class is compared: Defer, or what a converter raised
        return ("refused", type(exc).__name__)


def _outcome(body: bytes, signal: str) -> tuple[Any, ...]:
    try:
        request, rejected = decode_body(body, JSON, None, LIMIT, signal)
    except Exception as exc:  # the refusal (its class and message) is what is compared
        return ("refused", type(exc).__name__, str(exc))
    return ("decoded", request.SerializeToString(deterministic=True),
            [(r.trace_id, r.span_id, r.name, r.reason) for r in rejected])


def reference(body: bytes, signal: str) -> tuple[Any, ...]:
    """What codec gave before the fast path: json_format."""
    with mock.patch.object(otlpjson, "parse", side_effect=otlpjson.Defer):
        return _outcome(body, signal)


def fast_path_takes(body: bytes, signal: str) -> bool:
    """Whether the fast path itself decodes `body` (rather than deferring)."""
    kind = SIGNALS[signal]
    try:
        otlpjson.parse(json.loads(body), kind.request, kind.id_paths)
    except (otlpjson.Defer, ValueError):
        return False
    return True


def assert_same(body: bytes, signal: str = "traces") -> None:
    assert _outcome(body, signal) == reference(body, signal), body[:300]


def capture_bodies() -> list[Path]:
    return sorted(p for p in CAPTURES.glob("*/*.json")
                  if b'"resourceSpans"' in p.read_bytes()[:2000])


def test_captures_decode_alike_and_by_the_fast_path() -> None:
    paths = capture_bodies()
    assert len(paths) >= 20
    for path in paths:
        body = path.read_bytes()
        assert _outcome(body, "traces")[0] == "decoded", path
        assert_same(body)
        assert fast_path_takes(body, "traces"), path


@settings(max_examples=150, deadline=None)
@given(mutated_json())
def test_fuzz_corpus_decodes_alike(body: bytes) -> None:
    assert_same(body)


# --- a seeded random corpus: valid requests of every signal, then broken ones ------------

EDGES: list[Any] = [
    None, True, False, 0, 1, -1, 2**31, 2**32, 2**63, 2**64, -(2**63) - 1, 10**400, 1.0, 1.5,
    -0.0, 1e300, "0", "1", "-1", "+1", "1e3", "1.0", " 1", "1 ", "1_0", "0x10", "\u0661",
    "18446744073709551616", "-9223372036854775809", "NaN", "Infinity", "-Infinity", "nan",
    "", "abc", "\ud800", "a\udc00b", "SPAN_KIND_CLIENT", "STATUS_CODE_ERROR",
    "SEVERITY_NUMBER_WARN", "AGGREGATION_TEMPORALITY_DELTA", "NOT_AN_ENUM", "00ff",
    "0123456789abcdef0123456789abcdef", "ASNFZ4mrze8=", "AQ", "-_-_", "zz", [], {}, [None],
    [1, "2"], {"[ext.field]": 1}, {"unknown": 1}, {"\udeba": 1}, {"stringValue": "x"},
    {"intValue": "5", "doubleValue": 1.0}, {"kvlistValue": {"values": []}},
]


def hex_id(rng: random.Random, size: int) -> Any:
    raw = rng.randbytes(size)
    return rng.choice([raw.hex(), raw.hex(), raw.hex().upper(), base64.b64encode(raw).decode(),
                       raw.hex()[:-1], "", "not-an-id", raw.hex()[:4] + " " + raw.hex()[4:]])


def integer(rng: random.Random, low: int = 0, high: int = 2**62) -> Any:
    n = rng.randint(low, high)
    return rng.choice([str(n), n, str(n)])


def any_value(rng: random.Random, depth: int) -> dict[str, Any]:
    kinds = ["stringValue", "boolValue", "intValue", "doubleValue", "bytesValue"]
    if depth > 0:
        kinds += ["arrayValue", "kvlistValue"]
    kind = rng.choice(kinds)
    value: Any = {
        "stringValue": lambda: rng.choice(["x", "héllo ✓", "", json.dumps({"a": [1, 2]})]),
        "boolValue": lambda: rng.random() < 0.5,
        "intValue": lambda: integer(rng, -(2**63), 2**63 - 1),
        "doubleValue": lambda: rng.choice([rng.uniform(-1e6, 1e6), 3, 0.0, "1.5"]),
        "bytesValue": lambda: base64.b64encode(rng.randbytes(rng.randint(0, 9))).decode(),
        "arrayValue": lambda: {"values": [any_value(rng, depth - 1)
                                          for _ in range(rng.randint(0, 3))]},
        "kvlistValue": lambda: {"values": attributes(rng, depth - 1, 3)},
    }[kind]()
    if rng.random() < 0.05:  # the proto name, which json_format accepts too
        kind = {"stringValue": "string_value", "intValue": "int_value",
                "kvlistValue": "kvlist_value"}.get(kind, kind)
    return {kind: value}


def attributes(rng: random.Random, depth: int = 2, most: int = 5) -> list[dict[str, Any]]:
    return [{"key": f"k{i}", "value": any_value(rng, depth)} for i in range(rng.randint(0, most))]


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"stringValue": "bottom"}
    for _ in range(depth):
        value = {"kvlistValue": {"values": [{"key": "k", "value": value}]}}
    return value


def span(rng: random.Random) -> dict[str, Any]:
    out: dict[str, Any] = {
        "traceId": hex_id(rng, 16), "spanId": hex_id(rng, 8), "name": f"span {rng.random()}",
        "kind": rng.choice([1, 2, 3, "SPAN_KIND_INTERNAL", "SPAN_KIND_SERVER", 0]),
        "startTimeUnixNano": integer(rng), "endTimeUnixNano": integer(rng),
        "attributes": attributes(rng),
    }
    if rng.random() < 0.7:
        out["parentSpanId"] = hex_id(rng, 8)
    if rng.random() < 0.3:
        out["events"] = [{"timeUnixNano": integer(rng), "name": "ev",
                          "attributes": attributes(rng, 1)}]
    if rng.random() < 0.2:
        out["links"] = [{"traceId": hex_id(rng, 16), "spanId": hex_id(rng, 8),
                         "traceState": "a=b", "flags": rng.randint(0, 3)}]
    if rng.random() < 0.5:
        out["status"] = rng.choice([{}, {"code": 2, "message": "boom"},
                                    {"code": "STATUS_CODE_OK"}])
    for key in ("droppedAttributesCount", "flags", "traceState"):
        if rng.random() < 0.1:
            out[key] = "k=v" if key == "traceState" else rng.randint(0, 9)
    if rng.random() < 0.05:
        out["attributes"].append({"key": "deep", "value": nested(rng.choice([40, 70, 99, 120]))})
    return out


def resource(rng: random.Random) -> dict[str, Any]:
    return {"attributes": attributes(rng, 1), "droppedAttributesCount": rng.randint(0, 2)}


def scope(rng: random.Random) -> dict[str, Any]:
    return {"name": "lib", "version": "1.0", "attributes": attributes(rng, 0, 2)}


def traces(rng: random.Random) -> dict[str, Any]:
    return {"resourceSpans": [
        {"resource": resource(rng), "schemaUrl": "https://x",
         "scopeSpans": [{"scope": scope(rng), "spans": [span(rng) for _ in range(
             rng.randint(0, 3))]} for _ in range(rng.randint(1, 2))]}
        for _ in range(rng.randint(1, 2))]}


def logs(rng: random.Random) -> dict[str, Any]:
    record = {"timeUnixNano": integer(rng), "observedTimeUnixNano": integer(rng),
              "severityNumber": rng.choice([9, "SEVERITY_NUMBER_INFO"]), "severityText": "INFO",
              "body": any_value(rng, 2), "attributes": attributes(rng),
              "traceId": hex_id(rng, 16), "spanId": hex_id(rng, 8), "eventName": "e"}
    return {"resourceLogs": [{"resource": resource(rng), "scopeLogs": [
        {"scope": scope(rng), "logRecords": [record]}]}]}


def metrics(rng: random.Random) -> dict[str, Any]:
    exemplar = {"timeUnixNano": integer(rng), "asDouble": 1.5, "traceId": hex_id(rng, 16),
                "spanId": hex_id(rng, 8), "filteredAttributes": attributes(rng, 0)}
    point = {"timeUnixNano": integer(rng), "startTimeUnixNano": integer(rng),
             "attributes": attributes(rng, 1), "exemplars": [exemplar],
             **rng.choice([{"asInt": integer(rng)}, {"asDouble": rng.uniform(0, 9)}])}
    histogram = {"timeUnixNano": integer(rng), "count": integer(rng), "sum": 2.5,
                 "bucketCounts": [integer(rng), 1], "explicitBounds": [1.0],
                 "exemplars": [exemplar]}
    data = rng.choice([
        {"gauge": {"dataPoints": [point]}},
        {"sum": {"dataPoints": [point], "isMonotonic": True,
                 "aggregationTemporality": rng.choice([1, "AGGREGATION_TEMPORALITY_DELTA"])}},
        {"histogram": {"dataPoints": [histogram], "aggregationTemporality": 2}},
    ])
    return {"resourceMetrics": [{"resource": resource(rng), "scopeMetrics": [
        {"scope": scope(rng), "metrics": [{"name": "m", "unit": "1", **data}]}]}]}


MAKERS = {"traces": traces, "logs": logs, "metrics": metrics}


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    items = value.items() if isinstance(value, dict) else (
        enumerate(value) if isinstance(value, list) else ())
    for key, child in items:
        yield from _paths(child, (*prefix, key))


def broken(rng: random.Random, data: dict[str, Any]) -> None:
    """Replace values, add keys (unknown, a field's other name, a second oneof member) or drop
    them at a few random places of `data`, in place."""
    paths = list(_paths(data))[1:]
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(paths)
        parent: Any = data
        for step in path[:-1]:
            inside = parent if isinstance(parent, dict) else range(len(parent)) if isinstance(
                parent, list) else ()
            parent = parent[step] if step in inside else None
        if not isinstance(parent, (dict, list)) or path[-1] not in (
                parent if isinstance(parent, dict) else range(len(parent))):
            continue  # an earlier change removed it
        action = rng.random()
        if action < 0.6:
            parent[path[-1]] = rng.choice(EDGES)
        elif action < 0.75 and isinstance(parent, dict):
            key = path[-1]
            snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in str(key))
            parent[rng.choice([snake, "somethingElse", "[ext]", "stringValue", "intValue"])] = (
                parent[key] if rng.random() < 0.5 else rng.choice(EDGES))
        elif isinstance(parent, dict):
            del parent[path[-1]]


def corpus(seed: int, count: int) -> Iterator[tuple[str, bytes]]:
    rng = random.Random(seed)
    for i in range(count):
        signal = rng.choice(["traces", "traces", "logs", "metrics"])
        data = MAKERS[signal](rng)
        if i % 3:
            broken(rng, data)
        text = json.dumps(data, ensure_ascii=rng.random() < 0.5 or "\\ud" in repr(data))
        body = text.encode("utf-8", "surrogatepass")
        if rng.random() < 0.05:
            body = body[: rng.randrange(len(body))]  # truncated: not JSON
        yield signal, body


def test_seeded_random_corpus_decodes_alike() -> None:
    outcomes: dict[str, int] = {}
    taken = 0
    for signal, body in corpus(seed=20261201, count=3000):
        expected = reference(body, signal)
        assert _outcome(body, signal) == expected, (signal, body[:400])
        outcomes[expected[0]] = outcomes.get(expected[0], 0) + 1
        taken += fast_path_takes(body, signal)
    # the corpus exercises both answers, and the fast path is what decodes most valid ones
    assert outcomes.get("decoded", 0) > 1200 and outcomes.get("refused", 0) > 200, outcomes
    assert taken > 1200, taken


@pytest.mark.parametrize("body, why", [
    (b'{"resourceSpans":[{"\\udeba":1}]}', "a lone surrogate as a key"),
    (b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"a\\ud800"}]}]}]}',
     "a lone surrogate in a span name"),
    (b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"a","startTimeUnixNano":1e400}]}]}]}',
     "a number past a double"),
    (b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"a"},{"name":"b","kind":"X",'
     b'"droppedEventsCount":-1}]}]}]}', "one span out of range: the other is kept"),
    (b'{"resource_spans":[{"scope_spans":[{"spans":[{"trace_id":"AAECAwQFBgcICQoLDA0ODw",'
     b'"traceId":"00"}]}]}]}', "a field under both names, ids under proto names"),
    (b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"a","attributes":[{"key":"k",'
     b'"value":{"intValue":"1","stringValue":null}}]}]}]}]}', "a null second oneof member"),
    (b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"a","attributes":[{"key":"k",'
     b'"value":{"doubleValue":18446744073709551616}}]}]}]}]}',
     "an integer past 64 bits as a double (orjson reads it as a float)"),
    (b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"a","attributes":[{"key":"k",'
     b'"value":{"intValue":18446744073709551616}}]}]}]}]}',
     "an integer past 64 bits as an integer (json_format refuses it as json read it)"),
    (b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"a","startTimeUnixNano":NaN}]}]}]}',
     "NaN, which only json reads"),
    (b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"a","a":1,"a":2}]}]}]}',
     "a repeated key"),
    (b'[{"resourceSpans":[]}]', "not an object"),
    (b'\xef\xbb\xbf{"resourceSpans":[]}', "a UTF-8 byte order mark"),
    ('{"resourceSpans":[]}'.encode("utf-16"), "UTF-16"),
])
def test_edge_cases_decode_alike(body: bytes, why: str) -> None:
    assert_same(body)


def test_the_fast_path_leaves_the_json_object_unchanged() -> None:
    data = json.loads(capture_bodies()[0].read_bytes())
    before = json.dumps(data)
    otlpjson.parse(data, SIGNALS["traces"].request, SIGNALS["traces"].id_paths)
    assert json.dumps(data) == before


def test_refusals_stay_invalid_payload() -> None:
    with pytest.raises(InvalidPayload, match="not a valid OTLP/JSON request"):
        decode_body(b'{"resourceSpans":{"a":1}}', JSON, None, LIMIT)


@pytest.mark.skipif(otlpjson.COMPILED_RUN is None, reason="the extension is not built")
def test_compiled_converters_give_what_python_gives(run: str) -> None:
    if run != "compiled":
        pytest.skip("compares both itself")
    bodies = [("traces", p.read_bytes()) for p in capture_bodies()]
    bodies += list(corpus(seed=20261204, count=3000))
    answers: dict[str, int] = {}
    for signal, body in bodies:
        expected = converted(body, signal, otlpjson.pure_run)
        assert converted(body, signal, otlpjson.COMPILED_RUN) == expected, (signal, body[:400])
        answers[expected[0]] = answers.get(expected[0], 0) + 1
    assert answers.get("converted", 0) > 1000 and answers.get("refused", 0) > 300, answers


@pytest.mark.skipif(otlpjson.COMPILED_RUN is None, reason="the extension is not built")
@settings(max_examples=150, deadline=None)
@given(mutated_json())
def test_compiled_converters_on_the_fuzz_corpus(body: bytes) -> None:
    assert (converted(body, "traces", otlpjson.COMPILED_RUN)
            == converted(body, "traces", otlpjson.pure_run))


def written(body: bytes, signal: str, encode: Any) -> tuple[Any, ...]:
    """The request the converters build from `body`, serialised by `encode`, or what refused
    it (the class: `encoded` turns any refusal into Defer)."""
    try:
        data = json.loads(body)
    except ValueError:
        return ("not JSON",)
    kind = SIGNALS[signal]
    with mock.patch.object(otlpjson, "encode", encode):
        try:
            return ("written", otlpjson.encoded(data, kind.request, kind.id_paths))
        except otlpjson.Defer:
            return ("refused",)


@pytest.mark.skipif(otlpjson.COMPILED_ENCODE is None, reason="the extension is not built")
def test_compiled_encoder_writes_what_the_message_serialises_to(run: str) -> None:
    """`_wire.encode` gives the bytes of the message `parse` builds (upb's serialisation), or
    defers where `parse` does, on captures and a seeded random corpus of every signal."""
    if run != "compiled":
        pytest.skip("compares both itself")
    bodies = [("traces", p.read_bytes()) for p in capture_bodies()]
    bodies += list(corpus(seed=20261205, count=3000))
    answers: dict[str, int] = {}
    for signal, body in bodies:
        expected = written(body, signal, otlpjson.pure_encode)
        assert written(body, signal, otlpjson.COMPILED_ENCODE) == expected, (signal, body[:400])
        answers[expected[0]] = answers.get(expected[0], 0) + 1
    assert answers.get("written", 0) > 1000 and answers.get("refused", 0) > 300, answers


@pytest.mark.skipif(otlpjson.COMPILED_ENCODE is None, reason="the extension is not built")
@settings(max_examples=150, deadline=None)
@given(mutated_json())
def test_compiled_encoder_on_the_fuzz_corpus(body: bytes) -> None:
    assert (written(body, "traces", otlpjson.COMPILED_ENCODE)
            == written(body, "traces", otlpjson.pure_encode))


def test_serialised_decoding_gives_the_request_and_its_bytes() -> None:
    """`decode_json_traces_serialised`: the request `decode_json_traces` gives, and its wire
    bytes when the fast path took the body (None when json_format decoded it)."""
    from tooltrail.collector.receivers.codec import (
        decode_json_traces,
        decode_json_traces_serialised,
    )

    bodies = [p.read_bytes() for p in capture_bodies()]
    bodies += [b for s, b in corpus(seed=20261206, count=600) if s == "traces"]
    taken = 0
    for body in bodies:
        try:
            request, rejected = decode_json_traces(body)
        except InvalidPayload as exc:
            with pytest.raises(InvalidPayload, match=re.escape(str(exc))):
                decode_json_traces_serialised(body)
            continue
        got, got_rejected, raw = decode_json_traces_serialised(body)
        assert got == request and got_rejected == rejected
        if raw is not None:
            taken += 1
            assert raw == request.SerializeToString()
    assert taken > 100, taken
