"""Result.pairs: the pairing the scores count, indexed like the differences (docs/matching.md,
"Results"), so a reader can align expected and actual calls."""

from __future__ import annotations

from tooltrail.matcher import Call, Trajectory, parse_expectation, score


def pairs(body: dict[str, object], turns: list[list[Call]]) -> list[list[dict[str, object]]]:
    return [r.to_dict()["pairs"] for r in score(parse_expectation(body), Trajectory(turns))]


def test_conversation_scope_indexes_calls_across_turns() -> None:
    turns = [[Call("a"), Call("x")], [Call("b", {"n": 2})]]
    body = {
        "id": "e",
        "calls": [{"name": "b", "arguments": {"n": 2}}, {"name": "a"}, {"name": "c"}],
        "match": "unordered",
    }
    (got,) = pairs(body, turns)
    assert got == [
        {"expected_index": 0, "actual_index": 2, "turn": 1},
        {"expected_index": 1, "actual_index": 0, "turn": 0},
    ]


def test_per_turn_lists_index_within_each_turn() -> None:
    turns = [[Call("a")], [Call("x"), Call("b")]]
    body = {"id": "e", "turns": [{"calls": [{"name": "a"}]}, {"calls": [{"name": "b"}]}]}
    assert pairs(body, turns) == [
        [
            {"expected_index": 0, "actual_index": 0, "turn": 0},
            {"expected_index": 0, "actual_index": 1, "turn": 1},
        ]
    ]


def test_each_turn_and_incompatible_calls() -> None:
    turns = [[Call("a", {"k": 1})], [Call("a", {"k": 2})]]
    body = {"id": "e", "scope": "each_turn", "calls": [{"name": "a", "arguments": {"k": 1}}]}
    first, second = pairs(body, turns)
    assert first == [{"expected_index": 0, "actual_index": 0, "turn": 0}]
    assert second == []  # a wrong argument is no pair (its difference names the call)
