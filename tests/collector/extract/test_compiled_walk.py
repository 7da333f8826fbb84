"""The compiled walk (`collector/extract/_wire.c`) against the pure-Python reference: whole
extraction outcomes (calls, traces and turns, keys, rejected and unextracted spans, span count,
lossy counts, or the exception) must be identical on every capture, the conventions' unit
cases, the seeded random corpus and the fuzz suite's mutated bodies."""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.collector.durability.test_fuzz_ingest import SEED_PB, mutated_bytes, mutated_json
from tests.collector.extract import extract_corpus as corpus
from tooltrail.collector.errors import InvalidPayload
from tooltrail.collector.extract import ExtractOptions, otlp
from tooltrail.collector.receivers.codec import JSON, PROTOBUF, decode_body

pytestmark = pytest.mark.skipif(otlp.COMPILED_WALK is None and os.environ.get("CI") != "true",
                                reason="the compiled walk is not built")


def test_ci_runs_the_compiled_walk() -> None:
    """CI builds the extension (`pip install -e .` in scripts/test): it must be what runs."""
    if os.environ.get("TOOLTRAIL_PURE_PYTHON") == "1":
        pytest.skip("TOOLTRAIL_PURE_PYTHON=1 asks for the pure walk")
    assert otlp.COMPILED_WALK is not None, otlp.walk_description()
    assert otlp.span_views is otlp.COMPILED_WALK


def _both(monkeypatch: pytest.MonkeyPatch, request: ExportTraceServiceRequest,
          options: ExtractOptions) -> tuple[str, str]:
    walks: dict[str, Callable[..., Any]] = {"pure": otlp.pure_span_views,
                                             "compiled": otlp.COMPILED_WALK}  # type: ignore[dict-item]
    out = []
    for name in ("pure", "compiled"):
        monkeypatch.setattr(otlp, "span_views", walks[name])
        out.append(corpus.outcome(request, options))
    return out[0], out[1]


@pytest.mark.parametrize("path", corpus.capture_files(), ids=lambda p: str(p.relative_to(
    corpus.CAPTURES)))
def test_captures(monkeypatch: pytest.MonkeyPatch, path: Any) -> None:
    request = corpus.read_request(path)
    for _, options in corpus.CAPTURE_OPTIONS:
        pure, compiled = _both(monkeypatch, request, options)
        assert compiled == pure


def test_random_corpus(monkeypatch: pytest.MonkeyPatch) -> None:
    for index in range(1500):
        request, options = corpus.request(random.Random(f"compiled:{index}"))
        pure, compiled = _both(monkeypatch, request, options)
        assert compiled == pure, f"corpus request {index}"


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


def _decoded(body: bytes, media: str) -> ExportTraceServiceRequest | None:
    try:
        request, _ = decode_body(body, media, None, 1 << 24)
    except InvalidPayload:
        return None
    return request  # type: ignore[no-any-return]


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(body=mutated_bytes(SEED_PB))
def test_mutated_protobuf(body: bytes) -> None:
    request = _decoded(body, PROTOBUF)
    if request is not None:
        _compare_without_fixture(request)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(body=mutated_json())
def test_mutated_json(body: bytes) -> None:
    request = _decoded(body, JSON)
    if request is not None:
        _compare_without_fixture(request)


def _compare_without_fixture(request: ExportTraceServiceRequest) -> None:
    with pytest.MonkeyPatch.context() as patch:
        pure, compiled = _both(patch, request, ExtractOptions())
    assert compiled == pure
