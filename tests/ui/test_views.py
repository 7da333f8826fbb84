"""The diff alignment (collector.ui.views.verdict) and the report renderer on results the
matcher produced, in every index space: conversation-wide, per-turn lists, one turn."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

from tooltrail.collector.ui.report import render_report
from tooltrail.collector.ui.views import verdict
from tooltrail.matcher import Call, Trajectory, parse_expectation, score


def conversation(turns: list[list[Call]]) -> dict[str, Any]:
    """The REST shape of a conversation, as far as the diff reads it."""
    return {"key": "k", "turns": [
        {"tool_calls": [{"name": c.name, "arguments": c.arguments, "error": c.error}
                        for c in t]} for t in turns]}  # fmt: skip


def judged(body: dict[str, Any], turns: list[list[Call]]) -> list[tuple[Any, ...]]:
    exp = parse_expectation(body)
    out = []
    for result in score(exp, Trajectory(turns)):
        v = verdict(exp.to_dict(), conversation(turns), result.to_dict())
        assert not v.notes or all(d["kind"] in ("count", "budget", "turn_missing", "turn_extra")
                                  for d in v.notes)
        out.append(tuple(
            [(r.status, r.expected_index, r.actual_index) for r in s.rows] for s in v.sections
        ))
    return out


def test_conversation_scope_rows() -> None:
    turns = [[Call("a", {"x": 1}), Call("rm")], [Call("b", {"x": 9})]]
    body = {"id": "e", "calls": [{"name": "a"}, {"name": "b", "arguments": {"x": 2}},
                                 {"name": "c"}], "forbid": ["rm"]}
    ((rows,),) = judged(body, turns)
    assert rows == [("paired", 0, 0), ("argument", 1, 2), ("missing", 2, None),
                    ("forbidden", None, 1)]


def test_per_turn_rows_stay_in_their_turn() -> None:
    turns = [[Call("a"), Call("z")], [Call("b", {"x": 1})]]
    body = {"id": "e", "turns": [{"calls": [{"name": "a"}], "match": "strict"},
                                 {"calls": [{"name": "b", "arguments": {"x": 2}}]},
                                 {"calls": [{"name": "c"}]}]}
    ((first, second, third),) = judged(body, turns)
    assert first == [("paired", 0, 0), ("unexpected", None, 1)]
    assert second == [("argument", 0, 0)]
    assert third == [("unpaired", 0, None)]  # the turn never happened
    exp = parse_expectation(body)
    (result,) = score(exp, Trajectory(turns))
    v = verdict(exp.to_dict(), conversation(turns), result.to_dict())
    assert [d["kind"] for d in v.sections[0].notes] == ["count"]  # strict: 1 expected, 2 made
    assert [d["kind"] for d in v.sections[2].notes] == ["turn_missing"]
    assert v.notes == []


def test_turn_scope_indexes_the_turn() -> None:
    turns = [[Call("a")], [Call("x"), Call("b", {"q": 1})]]
    body = {"id": "e", "scope": "turn", "turn": -1, "match": "strict",
            "calls": [{"name": "b", "arguments": {"q": 1}}]}
    ((rows,),) = judged(body, turns)
    assert rows == [("paired", 0, 1), ("unexpected", None, 0)]


def test_a_result_without_pairs_says_so() -> None:
    turns = [[Call("a")]]
    exp = parse_expectation({"id": "e", "calls": [{"name": "a"}, {"name": "b"}]})
    (result,) = score(exp, Trajectory(turns))
    old = {**result.to_dict(), "pairs": None, "expectation": "e", "expectation_version": 1,
           "conversation": "k"}
    v = verdict(exp.to_dict(), conversation(turns), old)
    assert v.unaligned and not verdict(exp.to_dict(), conversation(turns), result.to_dict())\
        .unaligned
    assert [r.status for r in v.sections[0].rows] == ["unpaired", "missing", "allowed"]
    html = render_report("r", [{"expectation": exp.to_dict(), "conversation": conversation(turns),
                                "result": old}])
    assert "only the differences are placed" in html


class Texts(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_report_is_self_contained_and_escapes() -> None:
    hostile = "</pre><script>alert(1)</script>"
    turns = [[Call("search", {"q": hostile})]]
    exp = parse_expectation({"id": "e", "calls": [{"name": "search", "arguments": {"q": 1}}]})
    (result,) = score(exp, Trajectory(turns))
    item = {"expectation": exp.to_dict(), "conversation": conversation(turns),
            "result": {**result.to_dict(), "expectation": "e<x>", "expectation_version": 1,
                       "conversation": "k"}}
    html = render_report("<title>", [item])
    parsed = Texts()
    parsed.feed(html)
    assert "script" not in parsed.tags and "link" not in parsed.tags and "img" not in parsed.tags
    text = "".join(parsed.text)
    assert hostile in text and result.reason in text and "e<x>" in text
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in html
