"""tooltrail's matcher: score an agent's tool-call trajectory against an expectation.

A pure library (no I/O). Parse an expectation with `parse_expectation` (or
`parse_expectation_text` for JSON/YAML), build a `Trajectory` of `Call`s (or with
`trajectory_from_json` from a `/score` body), and `score` it: one `Result` per
scope instance. `micro_summary` aggregates results (micro precision/recall/F1);
`expectation_from_trajectory` turns a recorded trajectory into a golden
expectation. The semantics are those of docs/matching.md; `tooltrail bench matcher`
(`python -m tooltrail.matcher.bench`) measures the speed.
"""

from .capture import expectation_from_calls, expectation_from_trajectory
from .expected import ExpectedCall, TurnSpec
from .payload import decode_json_text, trajectory_from_json
from .result import Counts, Difference, Result
from .scoring import score
from .selector import Selector, parse_selector
from .spec import Expectation, parse_expectation, parse_expectation_text
from .summary import micro_summary
from .types import Call, InvalidExpectation, InvalidTrajectory, Trajectory

__all__ = [
    "Call",
    "Counts",
    "Difference",
    "Expectation",
    "ExpectedCall",
    "InvalidExpectation",
    "InvalidTrajectory",
    "Result",
    "Selector",
    "Trajectory",
    "TurnSpec",
    "decode_json_text",
    "expectation_from_calls",
    "expectation_from_trajectory",
    "micro_summary",
    "parse_expectation",
    "parse_expectation_text",
    "parse_selector",
    "score",
    "trajectory_from_json",
]
