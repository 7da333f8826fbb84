"""Differences and the one-sentence reasons (docs/matching.md, "Differences").

Sentences count calls and turns from 1; structured fields index from 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .expected import ExpectedCall
from .result import Difference, DifferenceKind, new_difference
from .types import Call, index_path, key_path
from .values import ABSENT, MISSING, Mismatch, show


class Frame:
    """Where differences are found: a sentence prefix and how to find a call's turn.

    A plain class: one is made per scored scope, and a frozen dataclass's `__init__`
    costs more."""

    __slots__ = ("call_turns", "prefix", "turn")

    def __init__(
        self, prefix: str = "", turn: int | None = None, call_turns: Sequence[int] | None = None
    ) -> None:
        self.prefix = prefix
        self.turn = turn
        self.call_turns = call_turns


def plural(n: float, word: str) -> str:
    """`1 call`, `2 calls`."""
    text = str(n) if type(n) is int else show(n)  # what `show` gives an int, cheaper
    return f"{text} {word}" + ("" if n == 1 else "s")


def brief(call: Call) -> dict[str, Any]:
    """What a difference shows of an actual call."""
    return {"name": call.name, "arguments": call.arguments}


def rel_path(path: Sequence[str | int]) -> str:
    """A path relative to the arguments or result, as shown in sentences."""
    out = ""
    for part in path:
        out = index_path(out, part) if isinstance(part, int) else key_path(out, part)
    return out


def _diff(
    frame: Frame,
    kind: DifferenceKind,
    sentence: str,
    expected_index: int | None = None,
    actual_index: int | None = None,
    path: str | None = None,
    expected: Any = None,
    actual: Any = None,
) -> Difference:
    # The turn: the actual call's, else the frame's. The sentence takes the frame's prefix
    # (`In turn 2, expected …`).
    call_turns = frame.call_turns
    turn: int | None
    if actual_index is not None and call_turns is not None:
        turn = call_turns[actual_index]
    else:
        turn = frame.turn
    prefix = frame.prefix
    message = prefix + sentence[:1].lower() + sentence[1:] if prefix else sentence
    return new_difference(kind, message, expected_index, actual_index, turn, path, expected, actual)


def missing(frame: Frame, e: ExpectedCall, n_expected: int, n_called: int) -> Difference:
    """An expected call that nothing in the trajectory accounts for."""
    if n_called == 0:
        sentence = f"Expected `{e.name}`; it was never called."
    elif n_called < n_expected:
        sentence = (
            f"Expected `{e.name}` {plural(n_expected, 'time')}; "
            f"it was called {plural(n_called, 'time')}."
        )
    else:
        sentence = (
            f"Expected `{e.name}` once more (expected call {e.index + 1}); "
            "every call to it already matched another expected call."
        )
    return _diff(frame, "missing", sentence, expected_index=e.index, path=e.path,
                 expected=e.to_dict())  # fmt: skip


def _value_sentence(where: str, m: Mismatch, verb: str = "was") -> str:
    if m.expected == ABSENT:
        return f"{where} {verb} {show(m.actual)}, expected it to be absent."
    if m.actual is MISSING:
        return f"{where} {verb} missing, expected {m.expected}."
    return f"{where} {verb} {show(m.actual)}, expected {m.expected}."


def _at(path: tuple[str | int, ...]) -> str | None:
    return rel_path(path) if path else None


def mismatch(frame: Frame, e: ExpectedCall, a: int, call: Call) -> Difference | None:
    """Why an actual call of the same name is not compatible with an expected one."""
    head = f"Call {a + 1} `{call.name}`"
    spec = e.checked_arguments
    if spec is not None:
        m = spec.mismatch(call.arguments)
        if m is not None:
            at = _at(m.path)
            what = (
                _value_sentence(f"`{at}`", m) if at else _value_sentence("the arguments", m, "were")
            )
            return _diff(
                frame, "argument", f"{head}: {what}",
                expected_index=e.index, actual_index=a,
                path=_join(f"{e.path}.arguments", at),
                expected=m.spec, actual=None if m.actual is MISSING else m.actual,
            )  # fmt: skip
    err = e.error
    if err is not None:
        fields: dict[str, Any] = dict(
            expected_index=e.index, actual_index=a, path=f"{e.path}.error",
            expected=err if isinstance(err, bool) else err.to_json(), actual=call.error,
        )  # fmt: skip
        if err is False and call.failed:
            detail = f" ({show(call.error)})" if isinstance(call.error, str) else ""
            return _diff(frame, "error", f"{head} failed{detail}, expected it to succeed.",
                         **fields)  # fmt: skip
        if err is not False and not call.failed:
            what = "" if isinstance(err, bool) else f" with {err.describe()}"
            return _diff(frame, "error", f"{head} succeeded, expected it to fail{what}.",
                         **fields)  # fmt: skip
        if not isinstance(err, bool):
            text = call.error if isinstance(call.error, str) else ""
            m = err.mismatch(text)
            if m is not None:
                return _diff(frame, "error", f"{head}: " + _value_sentence("the error", m),
                             **fields)  # fmt: skip
    if e.result is not None:
        m = e.result.mismatch(call.result)
        if m is not None:
            at = _at(m.path)
            where = f"result `{at}`" if at else "the result"
            return _diff(
                frame, "result", f"{head}: " + _value_sentence(where, m),
                expected_index=e.index, actual_index=a, path=_join(f"{e.path}.result", at),
                expected=m.spec, actual=None if m.actual is MISSING else m.actual,
            )  # fmt: skip
    return None


def _join(base: str, at: str | None) -> str:
    """The field path of `base` followed by the relative path `at` (from `_at`): as
    `rel_path` would continue from `base`, a key joins with a dot, an index or a quoted
    key (`[…]`) without."""
    if not at:
        return base
    return base + at if at[0] == "[" else f"{base}.{at}"


def out_of_order(
    frame: Frame, e: ExpectedCall, a: int, call: Call, anchor: tuple[str, int, bool] | None
) -> Difference:
    """An expected call that was made, but not where the order allows.

    `anchor` is (name, actual index, True if `e` belongs after it) of the nearest
    expected call that was matched in order.
    """
    if anchor is None:
        sentence = f"Expected `{e.name}` elsewhere in the order; it was called at call {a + 1}."
    else:
        name, where, after = anchor
        side, when = ("after", "before") if after else ("before", "after")
        sentence = (
            f"Expected `{e.name}` {side} `{name}` (call {where + 1}); "
            f"it was called {when} it, at call {a + 1}."
        )
    return _diff(frame, "order", sentence, expected_index=e.index, actual_index=a, path=e.path,
                 expected=e.to_dict(), actual=brief(call))  # fmt: skip


def unexpected(frame: Frame, a: int, call: Call, detail: Difference | None = None) -> Difference:
    """An actual call the mode does not allow; `detail` says how the closest one differs."""
    head = f"Call {a + 1} `{call.name}`"
    sentence = f"{head} was not expected."
    if detail is not None:
        reason = detail.message[len(frame.prefix) :] if frame.prefix else detail.message
        reason = reason[:1].upper() + reason[1:]
        if reason.startswith(head + ": "):
            sentence = f"{head} was not expected: {reason[len(head) + 2 :]}"
        elif reason.startswith(head + " "):
            sentence = f"{head} was not expected: it{reason[len(head) :]}"
    return _diff(frame, "unexpected", sentence, actual_index=a, actual=brief(call))


def count(frame: Frame, expected: int, actual: int, path: str) -> Difference:
    """A length mismatch in `strict` or `unordered`."""
    were = "there was" if actual == 1 else "there were"
    sentence = f"Expected {plural(expected, 'call')}; {were} {actual}."
    return _diff(frame, "count", sentence, path=path, expected=expected, actual=actual)


def forbidden(frame: Frame, a: int, call: Call, index: int, glob: str) -> Difference:
    """A call to a forbidden tool."""
    sentence = f"`{call.name}` is forbidden but was called (call {a + 1})."
    return _diff(frame, "forbidden", sentence, actual_index=a, path=f"forbid[{index}]",
                 expected=glob, actual=call.name)  # fmt: skip


def not_allowed(frame: Frame, a: int, call: Call, allow: Sequence[str]) -> Difference:
    """A call to a tool outside `allow`."""
    sentence = f"`{call.name}` is not an allowed tool but was called (call {a + 1})."
    return _diff(frame, "not_allowed", sentence, actual_index=a, path="allow",
                 expected=list(allow), actual=call.name)  # fmt: skip


def failed(frame: Frame, a: int, call: Call) -> Difference:
    """A failed call under `require_no_errors`."""
    detail = f": {show(call.error, 120)}" if isinstance(call.error, str) else ""
    sentence = f"Call {a + 1} `{call.name}` failed{detail}."
    return _diff(frame, "error", sentence, actual_index=a, path="require_no_errors",
                 expected=False, actual=call.error)  # fmt: skip


def budget(frame: Frame, field: str, limit: int, actual: int) -> Difference:
    """Too many or too few calls in the scope."""
    bound = "at most" if field == "max_calls" else "at least"
    were = "there was" if actual == 1 else "there were"
    sentence = f"Expected {bound} {plural(limit, 'tool call')}; {were} {actual}."
    return _diff(frame, "budget", sentence, path=field, expected=limit, actual=actual)


def _turn_label(turn: int) -> str:
    if turn >= 0:
        return f"Turn {turn + 1}"
    return "The last turn" if turn == -1 else f"Turn {-turn} from the end"


def turn_missing(turn: int, n_turns: int, path: str) -> Difference:
    """An expected turn that did not happen."""
    were = (
        "there were no turns"
        if n_turns == 0
        else (f"there {'was' if n_turns == 1 else 'were'} {plural(n_turns, 'turn')}")
    )
    sentence = f"{_turn_label(turn)} is missing; {were}."
    return Difference(kind="turn_missing", message=sentence, turn=turn, path=path,
                      expected=turn, actual=n_turns)  # fmt: skip


def turn_extra(turn: int, n_expected: int) -> Difference:
    """A turn beyond the listed ones, without `allow_extra_turns`."""
    sentence = f"Turn {turn + 1} was not expected; expected {plural(n_expected, 'turn')}."
    return Difference(kind="turn_extra", message=sentence, turn=turn, path="turns",
                      expected=n_expected, actual=turn + 1)  # fmt: skip
