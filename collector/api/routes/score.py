"""Stateless scoring: an expectation and calls in, a result out; nothing is stored."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from collector.api.errors import ApiError
from collector.api.routes.expectations import parse
from collector.api.schemas import ErrorBody, ResultOut
from matcher import InvalidTrajectory, score
from matcher.payload import trajectory_from_json

router = APIRouter(prefix="/api/v1", tags=["score"], responses={400: {"model": ErrorBody}})


class CallIn(BaseModel):
    """One call to score."""

    name: str = Field(min_length=1)
    arguments: Any = None
    result: Any = None
    error: bool | str | None = None
    step: int | None = None
    call_id: str | None = None


class TurnIn(BaseModel):
    calls: list[CallIn]


class ScoreIn(BaseModel):
    """`{expectation, calls}` (one turn) or `{expectation, turns: [{calls}]}`."""

    expectation: dict[str, Any]
    calls: list[CallIn] | None = None
    turns: list[TurnIn] | None = None


class ScoreOut(ResultOut):
    """The result; with scope `each_turn`, `results` holds one result per turn."""

    results: list[ResultOut] | None = None


@router.post("/score", response_model=ScoreOut)
def score_calls(body: ScoreIn) -> ScoreOut:
    """Score calls against an expectation without storing anything."""
    if (body.calls is None) == (body.turns is None):
        raise ApiError(400, "give either `calls` or `turns`")
    exp = parse(body.expectation, require_id=False)
    try:  # arguments sent as JSON text (OpenAI style) are decoded here
        trajectory = trajectory_from_json(
            body.model_dump(exclude_unset=True, exclude={"expectation"})
        )
    except InvalidTrajectory as exc:
        raise ApiError(400, str(exc), {"path": exc.path, "message": exc.message}) from exc
    now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    outs = [
        ResultOut(
            **{
                **r.to_dict(),
                "expectation": exp.id or "",
                "expectation_version": 0,
                "conversation": None,
                "scored_at": now,
            }
        )
        for r in score(exp, trajectory)
    ]
    if len(outs) == 1:
        return ScoreOut(**outs[0].model_dump())
    first = next((o for o in outs if not o.passed), outs[-1])
    return ScoreOut(**first.model_dump(), results=outs)
