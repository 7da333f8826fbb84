"""Calls and trajectories: defaults, failure, step validation."""

from __future__ import annotations

import pytest

from tooltrail.matcher import (
    Call,
    InvalidTrajectory,
    Trajectory,
    decode_json_text,
    trajectory_from_json,
)


def test_call_defaults() -> None:
    c = Call("lookup")
    assert c.arguments == {} and c.result is None and c.error is None
    assert c.call_id is None and c.step is None
    assert Call("x", None).arguments == {}
    assert Call("x", "raw text").arguments == "raw text"
    with pytest.raises(AttributeError):
        c.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("error", "failed"),
    [(None, False), (False, False), ("", False), (True, True), ("timeout", True)],
)
def test_failed(error: bool | str | None, failed: bool) -> None:
    assert Call("x", error=error).failed is failed


def test_to_dict() -> None:
    c = Call("f", {"a": 1}, result="ok", error="boom", call_id="c1", step=2)
    assert c.to_dict() == {"name": "f", "arguments": {"a": 1}, "result": "ok", "error": "boom",
                           "call_id": "c1", "step": 2}  # fmt: skip
    assert Call("f").to_dict() == {"name": "f", "arguments": {}}


def test_trajectory_shapes() -> None:
    t = Trajectory.from_calls([Call("a"), Call("b")])
    assert len(t.turns) == 1 and [c.name for c in t.calls] == ["a", "b"]
    t = Trajectory([[Call("a")], [], [Call("b"), Call("c")]])
    assert [c.name for c in t.calls] == ["a", "b", "c"]
    assert t.call_turns == (0, 2, 2)
    assert Trajectory([]).calls == ()


def test_steps_may_repeat_and_increase() -> None:
    t = Trajectory.from_calls([Call("a", step=0), Call("b", step=0), Call("c"), Call("d", step=3)])
    assert t.blocks == ((0, 2), (2, 3), (3, 4))
    t = Trajectory([[Call("a", step=1)], [Call("b", step=0), Call("c", step=0)]])
    assert t.blocks == ((0, 1), (1, 3))  # steps restart in each turn


@pytest.mark.parametrize(
    ("turns", "message"),
    [
        ([[Call("a", step=2), Call("b", step=1)]],
         "turns[0].calls[1].step: steps must not decrease along the list (step 1 after step 2)"),
        ([[], [Call("a", step=1), Call("b"), Call("c", step=1)]],
         "turns[1].calls[2].step: steps must not decrease along the list "
         "(the calls of step 1 are not consecutive)"),
        ([[Call("a", step=True)]], "turns[0].calls[0].step: must be an integer"),  # type: ignore[arg-type]
        ([[Call("")]], "turns[0].calls[0].name: must be a non-empty string"),
        ([[Call("a", error=3)]], "turns[0].calls[0].error: must be a boolean or a message"),  # type: ignore[arg-type]
        ([["a"]], "turns[0].calls[0]: must be a Call"),
        (["ab"], "turns[0]: must be a list of calls"),
    ],
)  # fmt: skip
def test_invalid_trajectories(turns: list, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(InvalidTrajectory) as info:
        Trajectory(turns)
    assert str(info.value) == message
    assert isinstance(info.value, ValueError)


def test_from_calls_paths() -> None:
    with pytest.raises(InvalidTrajectory) as info:
        Trajectory.from_calls([Call("a", step=5), Call("b", step=4)])
    assert info.value.path == "calls[1].step"
    assert info.value.message == "steps must not decrease along the list (step 4 after step 5)"


def test_trajectory_from_json() -> None:
    t = trajectory_from_json(
        {
            "expectation": {"ignored": True},
            "calls": [
                {"name": "lookup", "arguments": '{"order_id": 42}', "step": 0},
                {"name": "refund", "arguments": '"{\\"amount\\": 1}"', "step": 0},
                {"name": "note", "arguments": "not json", "result": '{"ok": true}'},
                {"name": "raw", "arguments": "[1, 2]", "result": "42", "error": "boom"},
                {"name": "empty", "arguments": None, "call_id": "c9"},
            ],
        }
    )
    a, b, c, d, e = t.calls
    assert a.arguments == {"order_id": 42} and a.step == 0
    assert b.arguments == {"amount": 1}  # double-encoded
    assert c.arguments == "not json" and c.result == {"ok": True}
    assert d.arguments == "[1, 2]" and d.result == "42" and d.failed
    assert e.arguments == {} and e.call_id == "c9"
    t = trajectory_from_json({"turns": [{"calls": [{"name": "a"}]}, {"calls": []}, {}]})
    assert [len(turn) for turn in t.turns] == [1, 0, 0]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({}, "calls: required (or `turns`)"),
        ({"calls": {}}, "calls: must be a list of calls"),
        ({"calls": [{"name": "a"}, 3]}, "calls[1]: must be an object with a `name`"),
        ({"calls": [{"nam": "a"}]},
         "calls[0].nam: unknown field (expected name, arguments, result, error, call_id, step)"),
        ({"calls": [{"name": 1}]}, "calls[0].name: must be a non-empty tool name"),
        ({"calls": [{"name": "a", "error": 1}]},
         "calls[0].error: must be a boolean or a message, got 1"),
        ({"calls": [{"name": "a", "step": "1"}]}, 'calls[0].step: must be an integer, got "1"'),
        ({"calls": [{"name": "a", "step": 1.0}]}, "calls[0].step: must be an integer, got 1.0"),
        ({"calls": [{"name": "a", "call_id": 5}]}, "calls[0].call_id: must be a string, got 5"),
        ({"calls": [{"name": "a", "step": 1}, {"name": "b", "step": 0}]},
         "calls[1].step: steps must not decrease along the list (step 0 after step 1)"),
        ({"turns": {}}, "turns: must be a list of turns"),
        ({"turns": [[]]}, "turns[0]: must be an object with `calls`"),
        ({"turns": [{"calls": [], "x": 1}]}, "turns[0].x: unknown field (expected calls)"),
        ({"turns": [{"calls": [{"name": "a", "step": 2}, {"name": "a", "step": 1}]}]},
         "turns[0].calls[1].step: steps must not decrease along the list (step 1 after step 2)"),
        ({"calls": [], "turns": []}, "turns: give either `calls` or `turns`, not both"),
    ],
)  # fmt: skip
def test_trajectory_from_json_errors(data: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(InvalidTrajectory) as info:
        trajectory_from_json(data)
    assert str(info.value) == message


def test_decode_json_text() -> None:
    assert decode_json_text('{"a": 1}') == {"a": 1}
    assert decode_json_text("[1]") == [1]
    assert decode_json_text("[1]", (dict,)) == "[1]"
    assert decode_json_text("1") == "1"
    assert decode_json_text('{"a": ') == '{"a": '
    assert decode_json_text({"a": 1}) == {"a": 1}
