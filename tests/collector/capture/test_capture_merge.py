"""Merging explicit calls into the traced calls of their turn (seed 000, "Deduplication"), and
how positions map to stored turns; pure, on matcher Calls as the scoring worker merges them."""

from __future__ import annotations

from tooltrail.collector.capture.explicit import explicit_batch
from tooltrail.collector.capture.merge import (
    CALL_ACCESS,
    logical_turns,
    merge_calls,
    position_key,
    position_of,
)
from tooltrail.matcher import Call


def traced() -> list[Call]:
    return [Call("a", {"x": 1}, "t-a", call_id="id-a", step=0),
            Call("b", {"y": 2}, "t-b", call_id="id-b", step=0),
            Call("c", {}, "t-c", call_id=None, step=1)]


def test_id_first_then_signature_explicit_wins_rest_kept() -> None:
    explicit = [
        Call("b", {"y": 99}, "e-b", call_id="id-b", step=0),  # same id, other arguments
        Call("a", {"x": 1}, "e-a", call_id=None, step=1),  # same signature as a
        Call("c", {}, "e-c1", call_id=None, step=2),  # same signature as c
        Call("c", {}, "e-c2", call_id=None, step=3),  # a second c: nothing left to match
        Call("d", {}, "e-d", call_id="id-d", step=4),  # matches nothing
    ]
    merged = merge_calls(traced(), explicit, CALL_ACCESS)
    assert [(c.name, c.result, c.call_id, c.step) for c in merged] == [
        ("a", "e-a", "id-a", 0),  # explicit fields, the traced step and call id
        ("b", "e-b", "id-b", 0),
        ("c", "e-c1", None, 1),
        ("c", "e-c2", None, 2 + 3),  # unmatched: after the traced steps, in their own order
        ("d", "e-d", "id-d", 2 + 4),
    ]


def test_an_id_match_is_taken_before_a_signature_match() -> None:
    calls = [Call("a", {"x": 1}, "t1", call_id="one", step=0),
             Call("a", {"x": 1}, "t2", call_id="two", step=1)]
    merged = merge_calls(calls, [Call("a", {"x": 1}, "e", call_id="two", step=0)], CALL_ACCESS)
    assert [(c.result, c.call_id) for c in merged] == [("t1", "one"), ("e", "two")]


def test_empty_ids_never_match_by_id_and_numbers_compare_canonically() -> None:
    calls = [Call("a", {"n": 1.0}, "t", call_id=None, step=0)]
    merged = merge_calls(calls, [Call("a", {"n": 1}, "e", call_id="", step=0)], CALL_ACCESS)
    assert [(c.result, c.call_id) for c in merged] == [("e", None)]


def test_no_explicit_calls_leave_the_turn_as_it_is() -> None:
    assert merge_calls(traced(), [], CALL_ACCESS) == traced()


def test_positions_map_to_stored_turns_in_start_order() -> None:
    p1, p3 = position_key("k", 1), position_key("k", 3)
    assert (position_of(p1), position_of(p3), position_of("0af7651916cd43dd8448eb211c80319c"),
            position_of("turn#x:k")) == (1, 3, None, None)
    # stored turns t0, t1 (start order); explicit turns for positions 1 and 3
    assert logical_turns([(10, "t0"), (20, p1), (11, "t1"), (30, p3)]) == [
        (10, None), (11, 20), (None, 30)]
    assert logical_turns([(20, p1)]) == [(None, 20)]  # explicit only: its position alone


def test_explicit_span_ids_are_stable_and_count_repeats() -> None:
    body = {"calls": [{"name": "a"}, {"name": "a"}, {"name": "b", "arguments": {"k": 1}}]}
    first = explicit_batch("k", 0, body, now_ns=1)
    again = explicit_batch("k", 0, body, now_ns=999)
    assert [c.span_id for c in first.calls] == [c.span_id for c in again.calls]
    assert len({c.span_id for c in first.calls}) == 3
    assert {c.trace_id for c in first.calls} == {first.traces[0].turn_key} == {position_key("k", 0)}
