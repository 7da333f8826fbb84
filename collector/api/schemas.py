"""API schemas, separate from tables: what clients see and what OpenAPI documents."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from tooltrail.collector.store.jobs import JobStatus
from tooltrail.matcher.result import DifferenceKind

# Times are answered as RFC 3339 strings (`convert.rfc3339`): documented as such.
Timestamp = Annotated[str, Field(json_schema_extra={"format": "date-time"})]


class ErrorDetail(BaseModel):
    code: str
    message: str
    details: Any = None


class ErrorBody(BaseModel):
    """Every error answer."""

    error: ErrorDetail


class FieldError(BaseModel):
    path: str = Field(description="the field, dotted (empty for the whole body)")
    message: str


class InvalidRequestDetail(ErrorDetail):
    code: Literal["invalid_request"]
    details: list[FieldError]


class InvalidRequestBody(BaseModel):
    """A request that does not match the schema (422), every bad field named."""

    error: InvalidRequestDetail


class ToolCallOut(BaseModel):
    """One tool call as stored."""

    name: str
    arguments: Any = Field(description="decoded JSON arguments (raw text if it did not parse)")
    arguments_raw: str | None = None
    result: Any = None
    error: str | None = None
    status: str
    call_id: str | None = None
    trace_id: str
    span_id: str
    parent_span_id: str | None = None
    step: int | None = None
    start_time: Timestamp | None = None
    end_time: Timestamp | None = None
    convention: str
    executed: bool = True
    source: str = Field("otel", description="provenance: otel, explicit, a2a or adk_events")


class TurnOut(BaseModel):
    """One turn (one top-level agent run) with its tool calls in order."""

    index: int
    turn_key: str
    trace_id: str
    start_time: Timestamp | None
    end_time: Timestamp | None
    agents: list[str]
    tool_calls: list[ToolCallOut]


class ConversationSummary(BaseModel):
    """A conversation in a list."""

    key: str = Field(description="its conversation key, unique within its project")
    project: str = Field(description="its project (tooltrail.collector.projects; `?project=`)")
    service: str | None
    agents: list[str]
    first_seen: Timestamp | None
    last_seen: Timestamp | None
    start_time: Timestamp | None
    end_time: Timestamp | None
    turn_count: int
    call_count: int
    error_count: int


class ConversationOut(ConversationSummary):
    """A conversation with its turns."""

    attributes: dict[str, Any]
    turns: list[TurnOut]


class ConversationPage(BaseModel):
    data: list[ConversationSummary]
    next_cursor: str | None


class DifferenceOut(BaseModel):
    """One structured difference (docs/matching.md, "Differences"; `matcher.result.Difference`)."""

    kind: DifferenceKind
    expected_index: int | None = Field(description="into the expected calls, from 0")
    actual_index: int | None = Field(description="into the actual calls in scope, from 0")
    turn: int | None
    path: str | None = Field(description="field path in the expectation")
    expected: Any = None
    actual: Any = None
    message: str


class ResultOut(BaseModel):
    """One scored result (docs/matching.md, "Results")."""

    expectation: str
    expectation_version: int
    conversation: str | None
    scope: dict[str, Any]
    passed: bool
    score: float
    precision: float
    recall: float
    f1: float
    argument_score: float
    order_score: float | None
    reason: str
    differences: list[DifferenceOut]
    counts: dict[str, Any] | None = None
    pairs: list[dict[str, Any]] | None = None  # expected ↔ actual calls (matcher Result.pairs)
    scored_at: Timestamp | None
    current: bool | None = None


class ResultPage(BaseModel):
    data: list[ResultOut]
    next_cursor: str | None


class Selection(BaseModel):
    """Which conversations an expectation applies to (no selector: every conversation)."""

    every: bool = Field(description="true when it has no selector and applies to every one")
    selector: dict[str, Any] = Field(description="the normalised selector ({} for none)")
    description: str
    stored: int | None = Field(
        description="stored conversations it applies to now; null when it has a selector and "
        "too many are stored to count them in the request (its rescoring job finds them)"
    )


class ConversationResults(ResultPage):
    """A conversation's results and whether they are final."""

    scoring: Literal["pending", "scored"] = Field(
        description="pending: the worker still owes this conversation a pass (new spans, "
                    "settling, or a rescoring job); its results may change")


class ExpectationCreated(BaseModel):
    id: str
    version: int
    selects: Selection


class ExpectationOut(BaseModel):
    """A stored expectation version."""

    id: str
    project: str = Field(description="the project whose conversations it scores")
    version: int
    active: bool
    created_at: Timestamp | None
    expectation: dict[str, Any]


class ExpectationPage(BaseModel):
    data: list[ExpectationOut]
    next_cursor: str | None


class ValidationOut(BaseModel):
    valid: bool
    expectation: dict[str, Any] | None = None


class IngestErrorOut(BaseModel):
    at: Timestamp | None
    kind: str
    transport: str
    message: str
    trace_id: str | None
    span_id: str | None
    span_name: str | None


class IngestErrorList(BaseModel):
    data: list[IngestErrorOut]


class Figures(BaseModel):
    """Counts and micro-averaged figures over a set of results."""

    count: int
    passed: int
    failed: int
    pass_rate: float | None
    precision: float | None
    recall: float | None
    f1: float | None
    paired_actual: int
    total_actual: int
    paired_expected_weight: float
    total_expected_weight: float


class ToolFigures(BaseModel):
    precision: float
    recall: float
    f1: float
    paired_actual: int
    total_actual: int
    paired_expected_weight: float
    total_expected_weight: float


class ReasonCount(BaseModel):
    reason: str
    count: int


class BucketFigures(Figures):
    start: Timestamp | None = Field(description="bucket start, by conversation start time")


class SummaryOut(Figures):
    """An expectation's current results summarised for dashboards."""

    expectation: str
    tools: dict[str, ToolFigures]
    failure_reasons: list[ReasonCount]
    failure_kinds: dict[str, int]
    buckets: list[BucketFigures] | None = None


class JobIn(BaseModel):
    """A rescoring job: which expectations (default: all active), which conversations."""

    model_config = {"extra": "forbid"}

    kind: Literal["rescore", "reextract"] = Field(
        "rescore", description="reextract: extract the archived raw spans again, then rescore "
        "the conversations that changed (docs/operations.md#re-extraction)")
    expectations: list[str] | None = None
    selector: dict[str, Any] | None = None
    since: Timestamp | None = Field(None, description="conversations that ended after")
    until: Timestamp | None = Field(None, description="conversations that started before")


class JobCreated(BaseModel):
    id: str


class JobOut(BaseModel):
    """A rescoring job's progress."""

    id: str
    kind: Literal["rescore", "reextract"]
    status: JobStatus
    total: int
    done: int
    failed: int
    expectations: list[dict[str, Any]]
    selector: dict[str, Any] | None
    since: Timestamp | None
    until: Timestamp | None
    created_at: Timestamp | None
    started_at: Timestamp | None
    finished_at: Timestamp | None


class JobPage(BaseModel):
    data: list[JobOut]
    next_cursor: str | None
