"""API schemas, separate from tables: what clients see and what OpenAPI documents."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ErrorDetail(BaseModel):
    code: str
    message: str
    details: Any = None


class ErrorBody(BaseModel):
    """Every error answer."""

    error: ErrorDetail


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
    start_time: str | None = None
    end_time: str | None = None
    convention: str
    executed: bool = True
    source: str = Field("otel", description="provenance: otel, explicit, a2a or adk_events")


class TurnOut(BaseModel):
    """One turn (one top-level agent run) with its tool calls in order."""

    index: int
    turn_key: str
    trace_id: str
    start_time: str | None
    end_time: str | None
    agents: list[str]
    tool_calls: list[ToolCallOut]


class ConversationSummary(BaseModel):
    """A conversation in a list."""

    key: str
    service: str | None
    agents: list[str]
    first_seen: str | None
    last_seen: str | None
    start_time: str | None
    end_time: str | None
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


class ResultOut(BaseModel):
    """One scored result (MATCHING.md)."""

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
    differences: list[dict[str, Any]]
    counts: dict[str, Any] | None = None
    scored_at: str | None
    current: bool | None = None


class ResultPage(BaseModel):
    data: list[ResultOut]
    next_cursor: str | None


class ExpectationCreated(BaseModel):
    id: str
    version: int


class ExpectationOut(BaseModel):
    """A stored expectation version."""

    id: str
    version: int
    active: bool
    created_at: str | None
    expectation: dict[str, Any]


class ExpectationPage(BaseModel):
    data: list[ExpectationOut]
    next_cursor: str | None


class ValidationOut(BaseModel):
    valid: bool
    expectation: dict[str, Any] | None = None


class IngestErrorOut(BaseModel):
    at: str | None
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
    start: str | None = Field(description="bucket start (RFC 3339), by conversation start time")


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

    expectations: list[str] | None = None
    selector: dict[str, Any] | None = None
    since: str | None = Field(None, description="RFC 3339; conversations that ended after")
    until: str | None = Field(None, description="RFC 3339; conversations that started before")


class JobCreated(BaseModel):
    id: str


class JobOut(BaseModel):
    """A rescoring job's progress."""

    id: str
    status: str
    total: int
    done: int
    failed: int
    expectations: list[dict[str, Any]]
    selector: dict[str, Any] | None
    since: str | None
    until: str | None
    created_at: str | None
    started_at: str | None
    finished_at: str | None
