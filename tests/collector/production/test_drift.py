"""The drift test itself: seeded simulations of same-distribution samples (false alarms at or
below alpha) and of a real shift (flagged)."""

from __future__ import annotations

import random

import pytest

from tests.fresh import fresh_json
from tooltrail.collector.production.counts import Counts, TurnSignal
from tooltrail.collector.production.drift import Thresholds, drift, jensen_shannon

TOOLS = ("search", "lookup", "refund")
MIX = (0.5, 0.3, 0.2)
RUNS = 1000


def sample(rng: random.Random, turns: int, zero_rate: float, mix: tuple[float, ...]) -> Counts:
    """`turns` turns: no call with probability `zero_rate`, else 1–4 calls drawn from `mix`."""
    counts = Counts()
    for _ in range(turns):
        n = 0 if rng.random() < zero_rate else rng.randint(1, 4)
        tools: dict[str, int] = {}
        for name in rng.choices(TOOLS, mix, k=n):
            tools[name] = tools.get(name, 0) + 1
        counts.add(TurnSignal(n, 0, 0, 0, tools))
    return counts


@pytest.mark.parametrize("alpha", [0.01, 0.05])
def test_false_alarm_rate_on_same_distribution_samples_is_at_most_alpha(alpha: float) -> None:
    # no effect-size floor: the tests' own significance decides, which is what is measured
    t = Thresholds(alpha=alpha, min_turns=30, min_zero_rate_diff=0.0,
                   min_tool_mix_distance=0.0, min_calls_shift=0.0)
    configured = Thresholds(alpha=alpha)  # the effect-size floors as shipped
    rng = random.Random(20261201)
    alarms = {"zero_tool_rate": 0, "tool_mix": 0, "calls_per_turn": 0}
    paged = dict.fromkeys(alarms, 0)
    for _ in range(RUNS):
        base, cand = sample(rng, 200, 0.1, MIX), sample(rng, 200, 0.1, MIX)
        for m in drift(base, cand, t):
            alarms[m.name] += m.flagged
        for m in drift(base, cand, configured):
            paged[m.name] += m.flagged
    # at or below alpha, allowing the simulation's own error (three binomial standard errors)
    slack = 3 * (alpha * (1 - alpha) / RUNS) ** 0.5
    for name, n in alarms.items():
        assert n / RUNS <= alpha + slack, (name, n)
    # with the configured floors too, a flag is rarer still: at or below alpha, no slack
    for name, n in paged.items():
        assert n <= alarms[name] and n / RUNS <= alpha, (name, n)


def test_a_real_shift_is_flagged_and_a_small_sample_is_not() -> None:
    t = Thresholds()
    rng = random.Random(7)
    base = sample(rng, 400, 0.03, MIX)
    cand = sample(rng, 400, 0.38, (0.2, 0.2, 0.6))
    flagged = {m.name: m for m in drift(base, cand, t)}
    assert flagged["zero_tool_rate"].flagged
    assert flagged["tool_mix"].flagged
    assert flagged["calls_per_turn"].flagged
    low, high = flagged["zero_tool_rate"].low, flagged["zero_tool_rate"].high
    assert low is not None and high is not None and low < 0.35 < high
    small = drift(sample(rng, 20, 0.03, MIX), sample(rng, 20, 0.38, MIX), t)
    assert not any(m.flagged for m in small)
    assert {m.reason for m in small} == {"too few turns on one side"}


def test_significant_but_small_is_not_flagged() -> None:
    rng = random.Random(11)
    base, cand = sample(rng, 20000, 0.10, MIX), sample(rng, 20000, 0.13, MIX)
    zero = drift(base, cand, Thresholds())[0]
    assert zero.p_value is not None and zero.p_value < 0.01
    assert not zero.flagged and "below the threshold" in zero.reason


def test_jensen_shannon_distance_bounds() -> None:
    assert jensen_shannon({"a": 1.0}, {"a": 1.0}) == 0.0
    assert abs(jensen_shannon({"a": 1.0}, {"b": 1.0}) - 1.0) < 1e-12
    assert 0 < jensen_shannon({"a": 0.6, "b": 0.4}, {"a": 0.4, "b": 0.6}) < 1


def test_scipy_loads_only_when_two_versions_are_compared() -> None:
    """`serve` imports the drift module at start (signals routes, gauges); SciPy's stats are
    ~85 MB of every server's memory until a comparison needs them."""
    code = (
        "import json, sys\n"
        "import tooltrail.collector.cli, tooltrail.collector.service, tooltrail.collector.api.app\n"
        "from tooltrail.collector.production.counts import Counts, TurnSignal\n"
        "from tooltrail.collector.production.drift import Thresholds, drift\n"
        "loaded = lambda: sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'scipy'})\n"
        "before = loaded()\n"
        "a, b = Counts(), Counts()\n"
        "for i in range(40):\n"
        "    a.add(TurnSignal(i % 3, 0, 0, 0, {'search': i % 3} if i % 3 else {}))\n"
        "    b.add(TurnSignal(i % 2, 0, 0, 0, {'lookup': i % 2} if i % 2 else {}))\n"
        "drift(a, b, Thresholds())\n"
        "print(json.dumps([before, loaded()]))"
    )
    before, after = fresh_json(code)
    assert before == []
    assert "scipy" in after
