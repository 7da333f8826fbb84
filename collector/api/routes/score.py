"""Stateless scoring: an expectation and calls in, a result out; nothing is stored."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from collector.api.errors import ApiError
from collector.api.routes.expectations import parse
from collector.api.schemas import ErrorBody, ResultOut
from matcher import Call, InvalidTrajectory, Trajectory, score

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


def _calls(calls: list[CallIn]) -> list[Call]:
    return [
        Call(
            name=c.name,
            arguments=c.arguments if c.arguments is not None else {},
            result=c.result,
            error=c.error,
            step=c.step,
            call_id=c.call_id,
        )
        for c in calls
    ]


@router.post("/score", response_model=ScoreOut)
def score_calls(body: ScoreIn) -> ScoreOut:
    """Score calls against an expectation without storing anything."""
    if (body.calls is None) == (body.turns is None):
        raise ApiError(400, "give either `calls` or `turns`")
    exp = parse(body.expectation, require_id=False)
    try:
        if body.calls is not None:
            trajectory = Trajectory.from_calls(_calls(body.calls))
        else:
            trajectory = Trajectory(turns=[_calls(t.calls) for t in body.turns or []])
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
