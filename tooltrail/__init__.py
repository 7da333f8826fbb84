"""tooltrail: the one import name an agent project needs.

    from tooltrail import agent_turn, OTLPJsonLinesSpanExporter       # record a run
    from tooltrail import parse_expectation, Trajectory, Call, score   # score one locally

The code lives in the repository's top-level folders, installed as subpackages of this one
(`collector/` is `tooltrail.collector`, `matcher/` is `tooltrail.matcher`, `migrations/` is
`tooltrail.migrations`; this folder links to them), so a project with its own `collector` or
`matcher` package imports both without a clash. The names below are loaded on first use
(PEP 562): importing a subpackage, e.g. the pure matcher, loads nothing else.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tooltrail.collector.capture.record import Turn, agent_turn
    from tooltrail.collector.otlp_file import OTLPJsonLinesSpanExporter
    from tooltrail.matcher import (
        Call,
        Counts,
        Difference,
        Expectation,
        ExpectedCall,
        InvalidExpectation,
        InvalidTrajectory,
        Result,
        Selector,
        Trajectory,
        TurnSpec,
        decode_json_text,
        expectation_from_calls,
        expectation_from_trajectory,
        micro_summary,
        parse_expectation,
        parse_expectation_text,
        parse_selector,
        score,
        trajectory_from_json,
    )

__version__ = "0.1.0"

__all__ = [
    "Call",
    "Counts",
    "Difference",
    "Expectation",
    "ExpectedCall",
    "InvalidExpectation",
    "InvalidTrajectory",
    "OTLPJsonLinesSpanExporter",
    "Result",
    "Selector",
    "Trajectory",
    "Turn",
    "TurnSpec",
    "agent_turn",
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
# where each name is defined: the recording helper and the file exporter in the collector, the
# rest is the matcher's API
_HOMES = {name: "tooltrail.matcher" for name in __all__}
_HOMES.update({"agent_turn": "tooltrail.collector.capture.record",
               "Turn": "tooltrail.collector.capture.record",
               "OTLPJsonLinesSpanExporter": "tooltrail.collector.otlp_file"})


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'tooltrail' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # the next lookup is an ordinary one
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
