"""The matcher is a pure library: it imports nothing from the service side."""

from __future__ import annotations

import json
import subprocess
import sys

import matcher

FORBIDDEN = ("collector", "sqlalchemy", "fastapi", "grpc", "starlette", "uvicorn", "alembic")


def test_matcher_imports_no_service_modules() -> None:
    code = "import json, sys, matcher, matcher.bench; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    loaded = json.loads(out)
    bad = [m for m in loaded if m.split(".")[0] in FORBIDDEN]
    assert bad == []


def test_public_api() -> None:
    assert set(matcher.__all__) >= {
        "Call", "Trajectory", "Expectation", "Selector", "Result", "Difference",
        "InvalidExpectation", "InvalidTrajectory", "parse_expectation",
        "parse_expectation_text", "score", "micro_summary",
    }  # fmt: skip
    for name in matcher.__all__:
        assert getattr(matcher, name).__doc__
