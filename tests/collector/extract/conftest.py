"""Every extraction test runs on both walks: the pure-Python reference and the compiled walk
(`collector.extract._wire`), when it is built (in CI it must be: test_compiled_walk.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tooltrail.collector.extract import decoding, otlp
from tooltrail.collector.model import ToolCall

# each walk: (the span walk, the JSON decoding of attribute values, the ToolCall maker),
# switched together
WALKS: dict[str, tuple[object, object, object]] = {
    "pure": (otlp.pure_span_views, decoding.pure_decode_json, ToolCall)}
if otlp.COMPILED_WALK is not None:
    WALKS["compiled"] = (otlp.COMPILED_WALK, otlp.COMPILED_JSON, otlp.COMPILED_CALL)


@pytest.fixture(autouse=True, params=sorted(WALKS))
def walk(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The walk extraction takes in this test."""
    if request.module.__name__.endswith("test_compiled_walk") and request.param != "compiled":
        pytest.skip("compares both walks itself")
    in_server = ("server" in request.fixturenames
                 or request.node.get_closest_marker("server_process") is not None)
    if in_server and request.param != sorted(WALKS)[0]:
        # a server subprocess walks as its environment says; its state is shared per module
        pytest.skip("the server process chooses its walk itself")
    views, decode_json, tool_call = WALKS[request.param]
    monkeypatch.setattr(otlp, "span_views", views)
    monkeypatch.setattr(decoding, "decode_json", decode_json)
    monkeypatch.setattr(otlp, "tool_call", tool_call)
    yield request.param
