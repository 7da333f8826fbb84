"""View models built from the REST shapes (GET /api/v1/conversations/{key} and the results
routes): the page and the report render the same dicts, so one diff renderer serves both.

The alignment is the matcher's own: `pairs` (expected ↔ actual calls the scores counted) and
each difference's `expected_index` / `actual_index` / `turn`. Nothing here scores anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# kinds about one actual call even when they name an expected call's index, and kinds about
# a scope as a whole (shown under its section, or under the verdict)
ON_ACTUAL = {"unexpected", "forbidden", "not_allowed"}
ON_SCOPE = {"count", "budget", "turn_missing", "turn_extra"}
LABELS = {
    "allowed": "not paired",
    "unpaired": "not paired",
    "missing": "missing",
    "unexpected": "extra",
    "argument": "wrong argument",
    "order": "out of order",
    "count": "wrong count",
    "forbidden": "forbidden",
    "not_allowed": "not allowed",
    "budget": "over budget",
    "error": "error",
    "result": "wrong result",
    "turn_missing": "turn missing",
    "turn_extra": "extra turn",
}


@dataclass
class Row:
    """One line of the diff: an expected call, the actual call it is aligned with, and the
    differences found at that place."""

    expected: dict[str, Any] | None
    expected_index: int | None
    actual: dict[str, Any] | None
    actual_index: int | None
    differences: list[dict[str, Any]] = field(default_factory=list)

    @property
    def status(self) -> str:
        if self.differences:
            return str(self.differences[0]["kind"])
        if self.expected is None:
            return "allowed"  # an actual call the mode lets go unpaired
        return "paired" if self.actual is not None else "unpaired"  # e.g. in a missing turn


@dataclass
class Section:
    """The rows of one list of expected calls against one list of actual calls."""

    title: str | None
    rows: list[Row]
    notes: list[dict[str, Any]] = field(default_factory=list)  # differences of the scope


@dataclass
class Verdict:
    expectation: dict[str, Any]  # the definition
    result: dict[str, Any]
    sections: list[Section]
    notes: list[dict[str, Any]]  # differences with no place in any section

    @property
    def unaligned(self) -> bool:
        """Scored before results recorded their pairing: only differences can be placed."""
        return self.result.get("pairs") is None


def label(kind: str) -> str:
    return LABELS.get(kind) or kind


def conversation_calls(conversation: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """Each turn's calls, in the order the matcher saw them."""
    return [list(t.get("tool_calls") or []) for t in conversation.get("turns") or []]


def _turn_index(scope: dict[str, Any], n_turns: int) -> int | None:
    t = scope.get("turn")
    if not isinstance(t, int):
        return None
    index = t + n_turns if t < 0 else t
    return index if 0 <= index < n_turns else None


def verdict(
    expectation: dict[str, Any], conversation: dict[str, Any], result: dict[str, Any]
) -> Verdict:
    """Align the expectation's calls with the conversation's as the result paired them."""
    turns = conversation_calls(conversation)
    scope = result.get("scope") or {"kind": "conversation"}
    pairs = result.get("pairs") or []
    diffs = list(result.get("differences") or [])
    spaces: list[tuple[str | None, list[Any], list[dict[str, Any]], int | None]]
    if expectation.get("turns") is not None and scope.get("kind") == "conversation":
        spaces = []
        for n, spec in enumerate(expectation["turns"]):
            actual = turns[n] if n < len(turns) else []
            spaces.append((f"Turn {n + 1}", list(spec.get("calls") or []), actual, n))
        per_turn = True
    else:
        if scope.get("kind") == "turn":
            found = _turn_index(scope, len(turns))
            actual = turns[found] if found is not None else []
            title = f"Turn {scope['turn'] + 1}" if scope["turn"] >= 0 else "Turn"
        else:
            actual = [c for turn in turns for c in turn]
            title = None
        spaces = [(title, list(expectation.get("calls") or []), actual, None)]
        per_turn = False
    sections: list[Section] = []
    placed: set[int] = set()
    for title, expected, actual, t in spaces:

        def here(item: dict[str, Any], t: int | None = t) -> bool:
            return not per_turn or item.get("turn") == t

        section_pairs = {p["expected_index"]: p["actual_index"] for p in pairs if here(p)}
        rows = [Row(e, j, None, None) for j, e in enumerate(expected)]
        for j, a in section_pairs.items():
            if 0 <= j < len(rows) and 0 <= a < len(actual):
                rows[j].actual, rows[j].actual_index = actual[a], a
        by_actual = {r.actual_index: r for r in rows if r.actual_index is not None}
        extra: dict[int, Row] = {}
        notes: list[dict[str, Any]] = []
        for n, d in enumerate(diffs):
            if n in placed or not here(d):
                continue
            j, a = d.get("expected_index"), d.get("actual_index")
            if d["kind"] not in ON_ACTUAL and isinstance(j, int) and 0 <= j < len(rows):
                row = rows[j]
                if row.actual is None and isinstance(a, int) and 0 <= a < len(actual):
                    row.actual, row.actual_index = actual[a], a  # the call the sentence names
                    by_actual.setdefault(a, row)
                row.differences.append(d)
            elif isinstance(a, int) and 0 <= a < len(actual):
                row = by_actual.get(a) or extra.setdefault(a, Row(None, None, actual[a], a))
                row.differences.append(d)
            elif per_turn and d["kind"] in ON_SCOPE:  # this turn's count or absence
                notes.append(d)
            else:
                continue
            placed.add(n)
        # every actual call of the scope has a line: unpaired ones that no difference names
        # are calls the mode allows (e.g. extras under `superset`)
        for a, call in enumerate(actual):
            if a not in by_actual and a not in extra:
                extra[a] = Row(None, None, call, a)
        rows.extend(extra[a] for a in sorted(extra))
        sections.append(Section(title, rows, notes))
    notes = [d for n, d in enumerate(diffs) if n not in placed]
    return Verdict(expectation, result, sections, notes)


def steps(calls: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Consecutive calls of one step, together (parallel calls); a call without a step alone."""
    groups: list[list[dict[str, Any]]] = []
    for call in calls:
        step = call.get("step")
        if groups and step is not None and groups[-1][0].get("step") == step:
            groups[-1].append(call)
        else:
            groups.append([call])
    return groups

