"""Drift between two sets of turn counts (two versions, or a window and its baseline).

Each measure has an estimate, a test and, where one is defined, a confidence interval at the
configured level. A measure is flagged only when its test is significant at `alpha` AND its
effect is at least the configured size AND both sides have `min_turns` turns: a version with a
handful of turns never pages anyone, and a tiny but significant change on a huge sample neither.

- zero-tool-turn rate: difference of two proportions; pooled two-sided z test, Wald interval;
- tool mix: Jensen–Shannon distance (base 2, in [0, 1]) of the shares of calls per tool;
  chi-square test of homogeneity of the call counts per tool;
- calls per turn: difference of means; Welch's t test and interval.

SciPy's `stats` is imported inside the three statistical tests, on first use: it holds about
85 MB of memory, and `serve` imports this module at start (its signals routes and gauges),
while most servers never compare two versions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tooltrail.collector.production.counts import Counts


@dataclass(frozen=True, slots=True)
class Thresholds:
    """When a measure is flagged (collector.config: the `drift_*` settings)."""

    alpha: float = 0.01
    min_turns: int = 30
    min_zero_rate_diff: float = 0.10
    min_tool_mix_distance: float = 0.10
    min_calls_shift: float = 0.5


@dataclass(frozen=True, slots=True)
class Measure:
    """One drift measure: candidate − baseline (a distance for the tool mix)."""

    name: str
    baseline: float
    candidate: float
    estimate: float
    low: float | None
    high: float | None
    p_value: float | None
    flagged: bool
    reason: str


def jensen_shannon(p: dict[str, float], q: dict[str, float]) -> float:
    """Jensen–Shannon distance (square root of the divergence, base 2) of two distributions."""
    keys = set(p) | set(q)
    if not keys:
        return 0.0
    divergence = 0.0
    for k in keys:
        a, b = p.get(k, 0.0), q.get(k, 0.0)
        m = (a + b) / 2
        if a:
            divergence += a * math.log2(a / m) / 2
        if b:
            divergence += b * math.log2(b / m) / 2
    return math.sqrt(max(divergence, 0.0))


def _flag(significant: bool, large: bool, enough: bool, what: str) -> tuple[bool, str]:
    if not enough:
        return False, "too few turns on one side"
    if not significant:
        return False, "not significant"
    if not large:
        return False, f"significant but {what} is below the threshold"
    return True, "significant and large enough"


def zero_tool_rate(base: Counts, cand: Counts, t: Thresholds) -> Measure:
    """Two-proportion z test (pooled) on the share of turns with no tool call."""
    n1, n2 = base.turns, cand.turns
    p1, p2 = base.zero_tool_rate, cand.zero_tool_rate
    diff = p2 - p1
    p_value: float | None = None
    low = high = None
    if n1 and n2:
        from scipy import stats

        pooled = (base.zero_turns + cand.zero_turns) / (n1 + n2)
        se0 = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
        p_value = float(2 * stats.norm.sf(abs(diff) / se0)) if se0 else (1.0 if not diff else 0.0)
        se = math.sqrt(p1 * (1 - p1) / n1 + p2 * (1 - p2) / n2)
        z = float(stats.norm.ppf(1 - t.alpha / 2))
        low, high = diff - z * se, diff + z * se
    flagged, reason = _flag(p_value is not None and p_value < t.alpha,
                            abs(diff) >= t.min_zero_rate_diff,
                            min(n1, n2) >= t.min_turns, "the difference")
    return Measure("zero_tool_rate", p1, p2, diff, low, high, p_value, flagged, reason)


def tool_mix(base: Counts, cand: Counts, t: Thresholds) -> Measure:
    """Jensen–Shannon distance of the tool mixes; chi-square test of homogeneity."""
    distance = jensen_shannon(base.tool_mix, cand.tool_mix)
    names = sorted(set(base.tools) | set(cand.tools))
    p_value: float | None = None
    both = sum(base.tools.values()) > 0 and sum(cand.tools.values()) > 0
    if len(names) >= 2 and both:
        from scipy import stats

        table = [[base.tools.get(n, 0) for n in names], [cand.tools.get(n, 0) for n in names]]
        p_value = float(stats.chi2_contingency(table, correction=False).pvalue)
    elif both:
        p_value = 1.0  # one tool on both sides: the same mix
    flagged, reason = _flag(p_value is not None and p_value < t.alpha,
                            distance >= t.min_tool_mix_distance,
                            min(base.turns, cand.turns) >= t.min_turns, "the distance")
    return Measure("tool_mix", 0.0, distance, distance, None, None, p_value, flagged, reason)


def calls_per_turn(base: Counts, cand: Counts, t: Thresholds) -> Measure:
    """Welch's t test and interval on the mean calls per turn."""
    n1, n2 = base.turns, cand.turns
    m1, m2 = base.calls_per_turn, cand.calls_per_turn
    diff = m2 - m1
    p_value: float | None = None
    low = high = None
    if n1 >= 2 and n2 >= 2:
        a, b = base.calls_per_turn_variance / n1, cand.calls_per_turn_variance / n2
        se = math.sqrt(a + b)
        if se:
            from scipy import stats

            df = (a + b) ** 2 / (a * a / (n1 - 1) + b * b / (n2 - 1))
            p_value = float(2 * stats.t.sf(abs(diff) / se, df))
            q = float(stats.t.ppf(1 - t.alpha / 2, df))
            low, high = diff - q * se, diff + q * se
        else:
            p_value, low, high = (1.0 if not diff else 0.0), diff, diff
    flagged, reason = _flag(p_value is not None and p_value < t.alpha,
                            abs(diff) >= t.min_calls_shift,
                            min(n1, n2) >= t.min_turns, "the shift")
    return Measure("calls_per_turn", m1, m2, diff, low, high, p_value, flagged, reason)


def drift(base: Counts, cand: Counts, thresholds: Thresholds) -> list[Measure]:
    """Every drift measure of `cand` against `base`."""
    return [f(base, cand, thresholds) for f in (zero_tool_rate, tool_mix, calls_per_turn)]
