"""Additive counts of turns: one turn's contribution, and their sums per bucket."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

HISTOGRAM_TOP = 10  # calls per turn are counted exactly up to this; more fall in "10+"


def histogram_key(calls: int) -> str:
    """The calls-per-turn histogram bin of a turn with `calls` calls."""
    return str(calls) if calls < HISTOGRAM_TOP else f"{HISTOGRAM_TOP}+"


@dataclass(frozen=True, slots=True)
class TurnSignal:
    """What one (logical) turn contributes: its calls, how they ended, which tools."""

    calls: int
    failed: int  # executed and ended in error
    unexecuted: int  # requested by the model, never executed
    pending: int  # waiting for an approval (status `pending`)
    tools: Mapping[str, int]


@dataclass(slots=True)
class Counts:
    """Sums of turn signals: every figure of a bucket derives from these."""

    turns: int = 0
    zero_turns: int = 0
    calls: int = 0
    calls_sq: int = 0  # sum of squared calls per turn: the variance of calls per turn
    failed: int = 0
    unexecuted: int = 0
    pending: int = 0
    histogram: dict[str, int] = field(default_factory=dict)
    tools: dict[str, int] = field(default_factory=dict)

    def add(self, turn: TurnSignal, sign: int = 1) -> None:
        """Add (sign 1) or take away (sign -1) one turn's contribution."""
        self.turns += sign
        self.zero_turns += sign * (turn.calls == 0)
        self.calls += sign * turn.calls
        self.calls_sq += sign * turn.calls * turn.calls
        self.failed += sign * turn.failed
        self.unexecuted += sign * turn.unexecuted
        self.pending += sign * turn.pending
        _bump(self.histogram, histogram_key(turn.calls), sign)
        for name, n in turn.tools.items():
            _bump(self.tools, name, sign * n)

    def merge(self, other: Counts) -> None:
        """Add another bucket's counts."""
        self.turns += other.turns
        self.zero_turns += other.zero_turns
        self.calls += other.calls
        self.calls_sq += other.calls_sq
        self.failed += other.failed
        self.unexecuted += other.unexecuted
        self.pending += other.pending
        for key, n in other.histogram.items():
            _bump(self.histogram, key, n)
        for name, n in other.tools.items():
            _bump(self.tools, name, n)

    @classmethod
    def total(cls, parts: Iterable[Counts]) -> Counts:
        out = cls()
        for part in parts:
            out.merge(part)
        return out

    # Rates: calls-based rates are shares of calls (requested or executed), turn rates of turns.
    @property
    def zero_tool_rate(self) -> float:
        return self.zero_turns / self.turns if self.turns else 0.0

    @property
    def calls_per_turn(self) -> float:
        return self.calls / self.turns if self.turns else 0.0

    @property
    def calls_per_turn_variance(self) -> float:
        """Sample variance (n - 1) of calls per turn."""
        if self.turns < 2:
            return 0.0
        mean = self.calls / self.turns
        return max(self.calls_sq - self.turns * mean * mean, 0.0) / (self.turns - 1)

    def _share(self, n: int) -> float:
        return n / self.calls if self.calls else 0.0

    @property
    def failed_rate(self) -> float:
        return self._share(self.failed)

    @property
    def unexecuted_rate(self) -> float:
        return self._share(self.unexecuted)

    @property
    def pending_rate(self) -> float:
        return self._share(self.pending)

    @property
    def tool_mix(self) -> dict[str, float]:
        total = sum(self.tools.values())
        return {k: n / total for k, n in sorted(self.tools.items())} if total else {}


def _bump(table: dict[str, int], key: str, delta: int) -> None:
    value = table.get(key, 0) + delta
    if value:
        table[key] = value
    else:
        table.pop(key, None)
