"""Stateless scoring: an expectation and calls in, a result out; nothing is stored.

Any `read` key may call it, so its work is bounded: the body's size (413), then, before any
matching, the calls scored and the expected calls matched against them (422), and matching
itself by a time budget (422), in a child process killed when it runs past it; each answer
names the limit. The counts refuse most costly
requests without doing the work; the budget covers the shapes whose cost the counts do not
predict (matching is not linear in them).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from typing import Any, TypeVar

from fastapi import APIRouter, Request, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException
from starlette.types import Message

from tooltrail.collector.api.deps import State
from tooltrail.collector.api.errors import ApiError
from tooltrail.collector.api.routes.expectations import parse
from tooltrail.collector.api.schemas import ErrorBody, ResultOut
from tooltrail.collector.processes import ChildDied, DeadlineChildren, OverDeadline
from tooltrail.collector.stateless_score import score_json
from tooltrail.matcher import InvalidTrajectory
from tooltrail.matcher.payload import trajectory_from_json

MAX_SCORE_BYTES = 1024 * 1024  # request body
MAX_SCORE_CALLS = 1000  # actual calls, over all turns
MAX_EXPECTED_CALLS = 256  # expected calls, over all turns of the expectation
MAX_SCORE_SECONDS = 2.0  # wall time one request may spend matching
T = TypeVar("T")


class OverBudget(Exception):
    """Scoring ran past its time budget (its child process was killed)."""


def within_budget(children: DeadlineChildren, seconds: float, fn: Callable[..., T],
                  *args: Any) -> T:
    """fn(*args) in one of `children`, killed at `seconds` (matching is pure Python and C: only
    a process boundary stops both without leaving this process's state half-updated)."""
    try:
        return children.call(seconds, fn, *args)
    except OverDeadline as exc:
        raise OverBudget(str(exc)) from exc


class BoundedBody(APIRoute):
    """A route whose body is refused (413) once it grows past MAX_SCORE_BYTES, before the
    rest is read (a declared Content-Length is checked first)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def bounded(request: Request) -> Response:
            declared = request.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > MAX_SCORE_BYTES:
                raise _too_large()
            seen = 0

            async def receive() -> Message:
                nonlocal seen
                message = await request.receive()
                seen += len(message.get("body", b""))
                if seen > MAX_SCORE_BYTES:
                    raise _too_large()
                return message

            return await handler(Request(request.scope, receive))

        return bounded


def _too_large() -> HTTPException:
    return HTTPException(413, f"request body exceeds {MAX_SCORE_BYTES} bytes")


router = APIRouter(prefix="/api/v1", tags=["score"], route_class=BoundedBody,
                   responses={400: {"model": ErrorBody}, 413: {"model": ErrorBody}})


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
def score_calls(body: ScoreIn, app: State) -> ScoreOut:
    """Score calls against an expectation without storing anything."""
    if (body.calls is None) == (body.turns is None):
        raise ApiError(400, "give either `calls` or `turns`")
    exp = parse(body.expectation, require_id=False)
    actual = len(body.calls or ()) + sum(len(t.calls) for t in body.turns or ())
    if actual > MAX_SCORE_CALLS:
        raise ApiError(422, f"{actual} calls: at most {MAX_SCORE_CALLS} calls can be scored "
                       "in one request", {"path": "calls", "limit": MAX_SCORE_CALLS})
    expected = len(exp.calls or ()) + sum(len(t.calls) for t in exp.turns or ())
    if expected > MAX_EXPECTED_CALLS:
        raise ApiError(422, f"{expected} expected calls: at most {MAX_EXPECTED_CALLS} can be "
                       "scored in one request",
                       {"path": "expectation", "limit": MAX_EXPECTED_CALLS})
    payload = body.model_dump(exclude_unset=True, exclude={"expectation"})
    try:  # 400 here; the child decodes the same JSON (arguments sent as JSON text too)
        trajectory_from_json(payload)
    except InvalidTrajectory as exc:
        raise ApiError(400, str(exc), {"path": exc.path, "message": exc.message}) from exc
    if app.scorers is None:
        raise ApiError(503, "this server does not score requests")
    try:
        scored = within_budget(app.scorers, MAX_SCORE_SECONDS, score_json, body.expectation,
                               payload)
    except OverBudget as exc:
        raise ApiError(422, f"scoring took more than its budget of {MAX_SCORE_SECONDS} s: "
                       "send fewer calls or expected calls",
                       {"path": "", "limit": MAX_SCORE_SECONDS}) from exc
    except ChildDied as exc:  # out of memory, killed from outside: another child is started
        raise ApiError(503, "the scoring process died; retry") from exc
    now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    outs = [
        ResultOut(
            **{
                **r,
                "expectation": exp.id or "",
                "expectation_version": 0,
                "conversation": None,
                "scored_at": now,
            }
        )
        for r in scored
    ]
    if len(outs) == 1:
        return ScoreOut(**outs[0].model_dump())
    first = next((o for o in outs if not o.passed), outs[-1])
    return ScoreOut(**first.model_dump(), results=outs)
