"""ToolCall.evolve is dataclasses.replace, faster: same result, same refusal of unknown fields;
TraceInfo pickles (ingest processes send it back by the hundred) to an equal value."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from tooltrail.collector.model import ToolCall, TraceInfo

CALL = ToolCall("t", "s", "p", "lookup", "c1", {"id": 1}, None, {"ok": True}, None, "ok", 1, 2,
                "genai", {"k": "v"}, None, True)


@pytest.mark.parametrize("changes", [{}, {"step": 3}, {"step": 0, "executed": False},
                                     {"call_id": None, "arguments": "raw", "name": "other"}])
def test_evolve_matches_replace(changes: dict[str, object]) -> None:
    evolved = CALL.evolve(**changes)
    assert evolved == dataclasses.replace(CALL, **changes)  # type: ignore[arg-type]
    assert evolved is not CALL and CALL.step is None  # the original is untouched


def test_evolve_refuses_unknown_fields() -> None:
    with pytest.raises(TypeError, match="no field 'stepp'"):
        CALL.evolve(stepp=1)


def test_trace_info_pickles_to_an_equal_value() -> None:
    info = TraceInfo("t", "turn", "conv", 2, None, frozenset({"a", "b"}), 1, 2, True,
                     {"k": [1, {"x": None}]})
    for protocol in (2, pickle.HIGHEST_PROTOCOL):
        copy = pickle.loads(pickle.dumps(info, protocol))
        assert copy == info and copy is not info
        assert [getattr(copy, f.name) for f in dataclasses.fields(TraceInfo)] == [
            getattr(info, f.name) for f in dataclasses.fields(TraceInfo)]
