"""Every extraction test runs on both walks: the pure-Python reference and the compiled walk
(`collector.extract._wire`), when it is built (in CI it must be: test_compiled_walk.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tooltrail.collector.extract import otlp

WALKS = {"pure": otlp.pure_span_views}
if otlp.COMPILED_WALK is not None:
    WALKS["compiled"] = otlp.COMPILED_WALK


@pytest.fixture(autouse=True, params=sorted(WALKS))
def walk(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The walk extraction takes in this test."""
    if request.module.__name__.endswith("test_compiled_walk") and request.param != "compiled":
        pytest.skip("compares both walks itself")
    if "server" in request.fixturenames and request.param != sorted(WALKS)[0]:
        # a server subprocess walks as its environment says; its state is shared per module
        pytest.skip("the server process chooses its walk itself")
    monkeypatch.setattr(otlp, "span_views", WALKS[request.param])
    yield request.param
