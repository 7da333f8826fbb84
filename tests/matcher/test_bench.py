"""The benchmark runs (figures are for the closing note, not asserted)."""

from __future__ import annotations

import pytest

from tooltrail.matcher import bench, score


def test_bench_main_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--sizes", "10", "--seconds", "0.01", "--unordered-size", "50"]) == 0
    out = capsys.readouterr().out
    assert "evals/s" in out and "unordered" in out
    assert "passing" in out and "failing" in out  # one default run gives both rates


@pytest.mark.parametrize("mode", ["strict", "in_order", "unordered", "superset", "subset"])
def test_bench_cases_pass_and_fail_as_labelled(mode: str) -> None:
    exp, traj = bench.case(100, mode)
    assert score(exp, traj)[0].passed
    exp, traj = bench.case(100, mode, failing=True)
    assert not score(exp, traj)[0].passed
