"""The work of `POST /api/v1/score`, run in a child process under the route's time budget
(collector.processes.DeadlineChildren): JSON in, JSON out, so nothing but plain data crosses
the pipe. Imports only the matcher, so a child starts quickly."""

from __future__ import annotations

from typing import Any

from tooltrail.matcher import parse_expectation, score
from tooltrail.matcher.payload import trajectory_from_json


def score_json(expectation: dict[str, Any], trajectory: dict[str, Any]) -> list[dict[str, Any]]:
    """The results (`Result.to_dict()`) of an expectation and a trajectory already validated
    by the route (both parse: the route parsed them to answer 400s before sending them)."""
    results = score(parse_expectation(expectation, require_id=False),
                    trajectory_from_json(trajectory))
    return [r.to_dict() for r in results]
