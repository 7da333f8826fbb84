"""Capture without OpenTelemetry, over REST: explicit calls, ADK events, A2A tasks.

Each route reads its body (413 past the request limit), is admitted by the ingest budget
before reading it (503 + Retry-After when full, as OTLP), turns it into a Batch
(`collector.capture`) and hands it to the one ingest path (`Ingest.store`: the writer, its
group commit, ack after commit). A body that breaks a rule gets a 400 naming the field and
stores nothing. Answers are counts of what the caller sent: never stored data, since these
routes need only the `ingest` role (`is_capture_path`).
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.requests import ClientDisconnect

from tooltrail.collector.api.deps import Project
from tooltrail.collector.api.errors import error_body
from tooltrail.collector.api.schemas import ErrorBody
from tooltrail.collector.capture import a2a, adk_events, explicit
from tooltrail.collector.capture import body as body_json
from tooltrail.collector.config import Settings
from tooltrail.collector.errors import (
    InvalidPayload,
    Overloaded,
    PayloadTooLarge,
    UnsupportedMediaType,
)
from tooltrail.collector.extract.traces import key_size_problem
from tooltrail.collector.ingest import MEMORY_PER_BYTE, Ingest, admitted
from tooltrail.collector.model import Batch
from tooltrail.collector.receivers.http import read_body

log = logging.getLogger(__name__)
CAPTURE_PATH = re.compile(
    r"^/api/v1/(conversations/[^/]+/(turns/[^/]+/calls|adk-events)|a2a/tasks)$")
JSON_TYPES = ("application/json",)
LINE_TYPES = ("application/x-ndjson", "application/jsonl", "application/json-lines",
              "application/jsonlines")


def is_capture_path(method: str, path: str) -> bool:
    """True for the capture routes, which the `ingest` role may call (api.auth)."""
    return method == "POST" and CAPTURE_PATH.match(path) is not None


class CaptureAck(BaseModel):
    """What was committed: counts of the caller's own input, never stored data."""

    conversation: str | None = Field(None, description="the conversation written to")
    turns: int = Field(description="turns written (explicit: 1)")
    calls: int = Field(description="tool calls in the body (a resend stores no new rows)")
    skipped: list[dict[str, Any]] = Field(
        default_factory=list, description="A2A entries not read, and why")
    warning: str = ""


REFUSALS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "not what the route reads; nothing stored"},
    401: {"model": ErrorBody, "description": "keys are configured and none was given"},
    403: {"model": ErrorBody, "description": "the key has no ingest role"},
    413: {"model": ErrorBody, "description": "body over the request limit"},
    415: {"model": ErrorBody, "description": "content type not accepted"},
    503: {"model": ErrorBody, "description": "ingest queue full or store down; retry"},
}
EXPLICIT_BODY = {
    "type": "object", "required": ["calls"], "additionalProperties": False,
    "properties": {
        "calls": {"type": "array", "items": {
            "type": "object", "required": ["name"], "additionalProperties": False,
            "properties": {"id": {"type": "string", "default": ""},
                           "name": {"type": "string", "minLength": 1},
                           "arguments": {"type": "object", "default": {}},
                           "result": {"description": "non-strings are JSON-serialised"},
                           "error": {"description": "non-strings are JSON-serialised"}}}},
        "agent": {"type": "string"}, "service": {"type": "string"},
        "attributes": {"type": "object"},
    },
}


def _media(request: Request, allowed: tuple[str, ...]) -> str:
    raw = request.headers.get("content-type") or "application/json"
    media = raw.split(";", 1)[0].strip().lower()
    if media not in allowed:
        raise UnsupportedMediaType(f"content type {media!r}: use one of {', '.join(allowed)}")
    return media


def _json(body: bytes) -> Any:
    try:
        return body_json.loads(body)
    except ValueError as exc:
        raise explicit.BadCall("body", f"not JSON: {exc}") from exc


def _refusal(exc: Exception) -> JSONResponse:
    if isinstance(exc, Overloaded):
        retry = str(max(1, math.ceil(exc.retry_after)))
        return JSONResponse(error_body(503, str(exc)), 503, headers={"Retry-After": retry})
    if isinstance(exc, PayloadTooLarge):
        return JSONResponse(error_body(413, str(exc)), 413)
    if isinstance(exc, UnsupportedMediaType):
        return JSONResponse(error_body(415, str(exc)), 415)
    details = {"field": exc.field} if isinstance(exc, explicit.BadCall) else None
    return JSONResponse(error_body(400, str(exc), details), 400)


def router(ingest: Ingest, settings: Settings) -> APIRouter:
    """The capture routes bound to the one ingest path."""
    api = APIRouter(tags=["capture"])
    limit = settings.max_request_bytes
    options = settings.extract_options()

    async def capture(request: Request, transport: str, allowed: tuple[str, ...],
                      read: Callable[[bytes, str], Batch | a2a.A2aReading],
                      ack: Callable[[Batch, Any], CaptureAck]) -> JSONResponse:
        try:
            media = _media(request, allowed)
            declared = request.headers.get("content-length")
            size = int(declared) if declared and declared.isdigit() else 0
            if size > limit:
                raise PayloadTooLarge(f"request body of {size} bytes exceeds {limit}")
            with admitted(ingest, size) as ticket:  # decided before the body is read
                body = await read_body(request, limit)
                ticket.resize(len(body) * MEMORY_PER_BYTE)
                found = read(body, media)
                batch = found.batch if isinstance(found, a2a.A2aReading) else found
                for info in batch.traces:  # the rule of OTLP keys (extract.traces)
                    problem = key_size_problem(info.conversation_key)
                    if problem:
                        raise InvalidPayload(problem)
                result = await ingest.store(batch, transport)
        except (InvalidPayload, Overloaded) as exc:
            ingest.reject_request(transport, exc)
            return _refusal(exc)
        except ClientDisconnect:
            ingest.metrics.requests.labels(transport, "disconnected").inc()
            return JSONResponse(error_body(400, "the client disconnected"), 400)
        except Exception as exc:  # boundary: a clear answer, never a 500 with a trace
            log.exception("unexpected failure while capturing over REST")
            ingest.metrics.loop_errors.labels(f"capture_{transport}").inc()
            failure = InvalidPayload(f"could not process the request: {type(exc).__name__}")
            ingest.reject_request(transport, failure)
            return _refusal(failure)
        out = ack(batch, found)
        out.warning = result.error_message
        return JSONResponse(out.model_dump(), 200)

    @api.post(
        "/api/v1/conversations/{key}/turns/{index}/calls", response_model=CaptureAck,
        summary="Record a turn's tool calls explicitly (ArkSim's AgentResponse.tool_calls)",
        openapi_extra={"requestBody": {"required": True, "content": {
            "application/json": {"schema": EXPLICIT_BODY}}}},
        responses={**REFUSALS, 400: {"model": ErrorBody, "description":
                                     "a field rule broken (details.field names it)"}},
    )
    async def explicit_calls(key: str, index: str, request: Request,
                             project: Project) -> JSONResponse:
        """Explicit calls of turn `index` (zero-based, by start order), merged with the traced
        calls of that turn when they are read: by call id, then by (name, arguments); the
        explicit call wins; calls matching nothing are kept. A resend stores nothing new."""

        def read(body: bytes, _: str) -> Batch:
            position = explicit.check_index(index)
            return explicit.explicit_batch(key, position, _json(body), time.time_ns(), project)

        return await capture(request, "explicit", JSON_TYPES, read,
                             lambda b, _: CaptureAck(conversation=key, turns=1,
                                                     calls=len(b.calls)))

    @api.post(
        "/api/v1/conversations/{key}/adk-events", response_model=CaptureAck,
        summary="Record ADK session events (JSON Lines, kagent rows, or a JSON array)",
        openapi_extra={"requestBody": {"required": True, "content": {
            t: {"schema": {"type": "string"}} for t in (*LINE_TYPES, *JSON_TYPES)}}},
        responses=REFUSALS,
    )
    async def adk(key: str, request: Request, project: Project) -> JSONResponse:
        """ADK events of conversation `key`: each invocation is a turn; seed 004's rules."""

        def read(body: bytes, _: str) -> Batch:
            return adk_events.read_events(body, conversation=key,
                                          options=replace(options, project=project)).batch

        return await capture(request, "adk_events", (*LINE_TYPES, *JSON_TYPES), read,
                             lambda b, _: CaptureAck(conversation=key, turns=len(b.traces),
                                                     calls=len(b.calls)))

    @api.post(
        "/api/v1/a2a/tasks", response_model=CaptureAck,
        summary="Record an A2A Task's tool-call-capture artifacts (or a stream ending in it)",
        openapi_extra={"requestBody": {"required": True, "content": {
            t: {"schema": {"type": "object"}} for t in (*JSON_TYPES, *LINE_TYPES)}}},
        responses=REFUSALS,
    )
    async def a2a_tasks(request: Request, project: Project,
                        conversation: str | None = None) -> JSONResponse:
        """Tasks (each a turn of its contextId, or of `conversation`), extension
        https://arksim.arklex.ai/a2a/tool-call-capture/v1 (seed 000's rules)."""

        def read(body: bytes, _: str) -> a2a.A2aReading:
            return a2a.read_tasks(body, conversation=conversation, now_ns=time.time_ns(),
                                  project=project)

        def ack(batch: Batch, found: Any) -> CaptureAck:
            keys = {i.conversation_key for i in batch.traces}
            return CaptureAck(
                conversation=keys.pop() if len(keys) == 1 else None, turns=found.tasks,
                calls=len(batch.calls),
                skipped=[{"task": s.task, "artifact": s.artifact, "entry": s.entry,
                          "reason": s.reason} for s in found.skipped])

        return await capture(request, "a2a", (*JSON_TYPES, *LINE_TYPES), read, ack)

    return api

