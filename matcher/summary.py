"""Corpus aggregation: micro precision/recall/F1 (sum the pair counts, then divide)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .result import Result


def micro_prf(pa: float, ta: float, pw: float, tw: float) -> dict[str, float]:
    """Precision, recall and F1 from summed pair counts (paired/total actual calls, paired/total
    expected weight): 1 when a total is 0, F1 0 when either is 0."""
    precision = pa / ta if ta else 1.0
    recall = pw / tw if tw else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision and recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def micro_summary(results: Iterable[Result]) -> dict[str, Any]:
    """Counts, pass rate and **micro** precision/recall/F1 over many results.

    Micro: the pair counts of every result are summed, then divided — never a
    mean of per-conversation F1s. Also broken down per tool (`tools`). With no
    results, the rates are None.
    """
    n = passed = 0
    pa = ta = 0
    pw = tw = 0.0
    tools: dict[str, list[float]] = {}
    for r in results:
        n += 1
        passed += r.passed
        c = r.counts
        pa += c.paired_actual
        ta += c.total_actual
        pw += c.paired_expected_weight
        tw += c.total_expected_weight
        for name, t_pa, t_ta, t_pw, t_tw in c.tools:
            acc = tools.setdefault(name, [0, 0, 0.0, 0.0])
            acc[0] += t_pa
            acc[1] += t_ta
            acc[2] += t_pw
            acc[3] += t_tw
    out: dict[str, Any] = {
        "count": n,
        "passed": passed,
        "failed": n - passed,
        "pass_rate": passed / n if n else None,
        "paired_actual": pa,
        "total_actual": ta,
        "paired_expected_weight": pw,
        "total_expected_weight": tw,
    }
    if n:
        out.update(micro_prf(pa, ta, pw, tw))
    else:
        out.update({"precision": None, "recall": None, "f1": None})
    out["tools"] = {
        name: {
            **micro_prf(*acc),
            "paired_actual": int(acc[0]),
            "total_actual": int(acc[1]),
            "paired_expected_weight": acc[2],
            "total_expected_weight": acc[3],
        }
        for name, acc in sorted(tools.items())
    }
    return out
