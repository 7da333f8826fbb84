"""Scopes (conversation, turn, each_turn) and per-turn `turns:` expectations."""

from __future__ import annotations

from tooltrail.matcher import Trajectory, parse_expectation, score

from .util import call, names


def _score(expectation: dict[str, object], traj: Trajectory) -> list:  # type: ignore[type-arg]
    return score(parse_expectation(expectation), traj)


TRAJ = Trajectory([[call("a"), call("b")], [call("c")], [call("a"), call("d")]])


def test_conversation_scope_spans_turns() -> None:
    [r] = _score(names("a", "b", "c", "a", "d", match="strict"), TRAJ)
    assert r.passed and r.scope == {"kind": "conversation"}
    [r] = _score(names("b", "c", match="in_order"), TRAJ)
    assert r.passed


def test_turn_scope_positive_and_negative() -> None:
    [r] = _score({"scope": "turn", "turn": 1, **names("c", match="strict")}, TRAJ)
    assert r.passed and r.scope == {"kind": "turn", "turn": 1}
    [r] = _score({"scope": "turn", "turn": -1, **names("a", "d", match="strict")}, TRAJ)
    assert r.passed and r.scope == {"kind": "turn", "turn": 2}
    [r] = _score({"scope": "turn", "turn": -3, **names("a", "b", match="strict")}, TRAJ)
    assert r.passed and r.scope == {"kind": "turn", "turn": 0}
    [r] = _score({"scope": "turn", "turn": 0, **names("c")}, TRAJ)
    assert not r.passed and r.reason == "Expected `c`; it was never called."
    assert r.differences[0].turn == 0


def test_turn_scope_missing_turn_fails() -> None:
    [r] = _score({"scope": "turn", "turn": 3, **names("a", match="superset")}, TRAJ)
    assert not r.passed
    assert r.scope == {"kind": "turn", "turn": 3}
    assert [d.kind for d in r.differences] == ["turn_missing", "missing"]
    assert r.reason == "Turn 4 is missing; there were 3 turns."
    [r] = _score({"scope": "turn", "turn": -4}, TRAJ)  # even with nothing else to check
    assert not r.passed and r.differences[0].kind == "turn_missing"


def test_each_turn_gives_one_result_per_turn() -> None:
    results = _score({"scope": "each_turn", "forbid": ["d"], **names("a", match="superset")}, TRAJ)
    assert [r.scope for r in results] == [{"kind": "turn", "turn": t} for t in range(3)]
    assert [r.passed for r in results] == [True, False, False]
    assert results[1].reason == "Expected `a`; it was never called."
    assert results[2].reason == "`d` is forbidden but was called (call 2)."
    assert results[2].differences[0].turn == 2
    # the budget applies to each turn
    results = _score({"scope": "each_turn", "max_calls": 1}, TRAJ)
    assert [r.passed for r in results] == [False, True, False]


def test_each_turn_with_no_turns_fails() -> None:
    """An agent that did nothing must not pass silently."""
    [r] = _score({"scope": "each_turn", **names("a", match="superset")}, Trajectory([]))
    assert not r.passed
    assert r.scope == {"kind": "turn", "turn": 0}
    assert r.reason == "Turn 1 is missing; there were no turns."
    assert r.recall == 0.0
    # a turn that holds no call is a turn: scored normally
    [r] = _score({"scope": "each_turn", **names("a", match="superset")}, Trajectory([[]]))
    assert r.reason == "Expected `a`; it was never called."


def test_agent_that_called_nothing_fails_superset() -> None:
    for traj in (Trajectory([]), Trajectory([[]]), Trajectory.from_calls([])):
        [r] = _score(names("get_weather", match="superset"), traj)
        assert not r.passed
        assert r.reason == "Expected `get_weather`; it was never called."
        assert (r.precision, r.recall, r.f1) == (1.0, 0.0, 0.0)


PER_TURN = {
    "turns": [
        {"match": "strict", "calls": [{"name": "a"}, {"name": "b"}]},
        {"match": "unordered", "calls": [{"name": "c"}]},
        {"calls": [{"name": "d"}]},
    ],
    "match": "superset",
}


def test_per_turn_expectations() -> None:
    [r] = _score(PER_TURN, TRAJ)
    assert r.passed, r.reason
    assert r.scope == {"kind": "conversation"}
    assert r.order_score == 1.0  # from the strict turn only
    swapped = Trajectory([[call("b"), call("a")], [call("c")], [call("a"), call("d")]])
    [r] = _score(PER_TURN, swapped)
    assert not r.passed
    assert (
        r.reason
        == "In turn 1, expected `b` after `a` (call 2); it was called before it, at call 1."
    )
    assert r.differences[0].turn == 0
    assert r.order_score == 0.5


def test_per_turn_missing_turn_is_never_dropped() -> None:
    short = Trajectory([[call("a"), call("b")], [call("c")]])
    [r] = _score(PER_TURN, short)
    assert not r.passed
    assert [d.kind for d in r.differences] == ["turn_missing"]
    assert r.reason == "Turn 3 is missing; there were 2 turns."
    assert r.recall == 3 / 4
    assert r.precision == 1.0


def test_per_turn_extra_turn_fails_unless_allowed() -> None:
    long = Trajectory([*TRAJ.turns, [call("e")]])
    [r] = _score(PER_TURN, long)
    assert not r.passed
    assert [d.kind for d in r.differences] == ["turn_extra"]
    assert r.reason == "Turn 4 was not expected; expected 3 turns."
    assert r.differences[0].turn == 3
    assert r.precision == 4 / 6  # the extra turn's call was not expected, nor turn 3's `a`
    [r] = _score({**PER_TURN, "allow_extra_turns": True}, long)
    assert r.passed


def test_per_turn_constraints_cover_every_turn() -> None:
    exp = {**PER_TURN, "forbid": ["e"], "allow_extra_turns": True, "max_calls": 6}
    long = Trajectory([*TRAJ.turns, [call("e"), call("x")]])
    [r] = _score(exp, long)
    assert [d.kind for d in r.differences] == ["forbidden", "budget"]
    assert r.reason == "In turn 4, `e` is forbidden but was called (call 1)."
    assert r.differences[1].message == "Expected at most 6 tool calls; there were 7."


def test_per_turn_modes_default_to_the_expectation() -> None:
    exp = {"match": "strict", "arguments": "exact",
           "turns": [{"calls": [{"name": "a", "arguments": {"x": 1}}]}]}  # fmt: skip
    assert _score(exp, Trajectory([[call("a", x=1)]]))[0].passed
    assert not _score(exp, Trajectory([[call("a", x=1, y=2)]]))[0].passed
    assert not _score(exp, Trajectory([[call("a", x=1), call("a", x=1)]]))[0].passed


def test_empty_turn_list() -> None:
    [r] = _score({"turns": []}, Trajectory([[call("a")]]))
    assert r.reason == "Turn 1 was not expected; expected 0 turns."
    [r] = _score({"turns": []}, Trajectory([]))
    assert r.passed and r.order_score == 1.0
