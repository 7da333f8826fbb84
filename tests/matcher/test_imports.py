"""The matcher is a pure library: it imports nothing from the service side."""

from __future__ import annotations

import tooltrail.matcher
from tests.fresh import fresh_json

# packages and their modules (tooltrail.collector is a subpackage: its parent is no service)
FORBIDDEN = ("tooltrail.collector", "sqlalchemy", "fastapi", "grpc", "starlette", "uvicorn",
             "alembic")


def test_matcher_imports_no_service_modules() -> None:
    loaded = fresh_json("import json, sys, tooltrail.matcher, tooltrail.matcher.bench; "
                        "print(json.dumps(sorted(sys.modules)))")
    assert "tooltrail.matcher.bench" in loaded  # the program ran
    bad = [m for m in loaded if any(m == f or m.startswith(f"{f}.") for f in FORBIDDEN)]
    assert bad == []


def test_public_api() -> None:
    assert set(tooltrail.matcher.__all__) >= {
        "Call", "Trajectory", "Expectation", "Selector", "Result", "Difference",
        "InvalidExpectation", "InvalidTrajectory", "parse_expectation",
        "parse_expectation_text", "score", "micro_summary",
    }  # fmt: skip
    for name in tooltrail.matcher.__all__:
        assert getattr(tooltrail.matcher, name).__doc__


def test_numpy_and_scipy_load_only_when_a_large_assignment_needs_them() -> None:
    """Every process that scores (server, worker, ingest) imports the matcher; NumPy costs
    ~14 MB and SciPy's optimize ~50 MB there, and small trajectories never use them."""
    code = (
        "import json, sys, tooltrail.matcher\n"
        "from tooltrail.matcher.bench import case\n"
        "for mode in ('strict', 'unordered'):\n"
        "    tooltrail.matcher.score(*case(10, mode, failing=True))\n"
        "before = sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'scipy'))\n"
        "tooltrail.matcher.score(*case(300, 'unordered', failing=True))\n"
        "from tooltrail.matcher.assign import optimal_assignment\n"
        "optimal_assignment([[float(i * j % 7) for j in range(5)] for i in range(5)])\n"
        "after = sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'scipy'})\n"
        "print(json.dumps([before, after]))"
    )
    before, after = fresh_json(code)
    assert before == []
    # share matrices are plain lists: only an assignment too large to enumerate needs them
    assert after == ["numpy", "scipy"]
