"""The extraction pass over one OTLP request, optionally explaining what each span contributed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tooltrail.collector.extract import otlp
from tooltrail.collector.extract.approvals import interrupt_calls
from tooltrail.collector.extract.conventions import (
    Claims,
    convention_keys,
    conventions_for,
    skipped,
)
from tooltrail.collector.extract.decoding import noting
from tooltrail.collector.extract.dedup import collapse
from tooltrail.collector.extract.fields import NotExtractable, build_call
from tooltrail.collector.extract.otlp import SpanView
from tooltrail.collector.extract.requests import is_llm_span, llm_requested_calls, request_rows
from tooltrail.collector.extract.traces import (
    KeyFinder,
    TraceAccumulator,
    is_agent_span,
    key_problem,
)
from tooltrail.collector.model import Batch, RejectedSpan, ToolCall
from tooltrail.collector.projects import DEFAULT_PROJECT

PLUMBING_NAMES = frozenset({"transfer_to_agent", "final_result", "final_answer"})
DEFAULT_CONVERSATION_KEYS = (
    "traceloop.association.properties.session_id",
    "ai.telemetry.metadata.sessionId",  # AI SDK <= 6: experimental_telemetry.metadata
    "ai.settings.context.sessionId",  # AI SDK 7: runtimeContext + telemetry.includeRuntimeContext
    "langsmith.metadata.thread_id",  # LangSmith's OTel export: config metadata / thread_id
)


@dataclass(frozen=True, slots=True)
class ExtractOptions:
    """Knobs of extraction (from Settings)."""

    conversation_keys: Sequence[str] = DEFAULT_CONVERSATION_KEYS
    keep_plumbing: bool = False
    project: str = DEFAULT_PROJECT  # of traces whose resource names none (Settings.project)
    # the text of a user's conventions file (Settings.conventions), validated at start: text,
    # not parsed entries, so that it pickles to the ingest processes and stores in a job spec
    conventions: str = ""

    def keys(self) -> tuple[str, ...]:
        """The conversation keys: the configured ones, then those a user's conventions name."""
        return (*self.conversation_keys, *convention_keys(self.conventions))


def is_plumbing(name: str) -> bool:
    """Framework plumbing that is not a tool the agent chose (docs/conventions.md)."""
    return name in PLUMBING_NAMES or name.startswith(("adk_", "transfer_to_"))


@dataclass(slots=True)
class SpanNote:
    """What one span contributed (`notes`), or why it contributed nothing (`why_not`)."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    kind: str
    start_ns: int
    notes: list[str] = field(default_factory=list)
    why_not: str = ""


@dataclass(slots=True)
class Analysis:
    """A Batch, plus one SpanNote per span when asked to explain."""

    batch: Batch
    spans: list[SpanNote] = field(default_factory=list)


def analyze(
    request: ExportTraceServiceRequest, options: ExtractOptions | None = None,
    *, explain: bool = False, raw: bytes | None = None,
) -> Analysis:
    """Turn one OTLP request into a Batch. Bad spans are rejected alone, with a reason.
    `raw`: the request serialised, when the caller holds it (`otlp.span_views`)."""
    options = options or ExtractOptions()
    rejected: list[RejectedSpan] = []
    views: list[tuple[SpanView, tuple[str, str] | None]] = []  # a span, its conversation key
    find_key = KeyFinder(options.keys())
    with noting() as lossy:
        items = otlp.span_views(request, raw)
        count = len(items)
        # SpanItem pairs (view, name as sent) or (None, RejectedSpan): mypy does not narrow
        # the second member by the first
        for view, sent in items:
            if view is None:
                rejected.append(sent)  # type: ignore[arg-type]
                continue
            found = find_key(view)
            problem = key_problem(view, found)
            if problem is not None:
                rejected.append(RejectedSpan(view.trace_id, view.span_id, sent, problem))  # type: ignore[arg-type]
                continue
            views.append((view, found))
        index = {(v.trace_id, v.span_id): v for v, _ in views}
        pass_ = _Pass(options, index, explain)
        for span, found in views:
            pass_.add(span, found)
        analysis = pass_.finish(rejected, count)
    analysis.batch = replace(analysis.batch, lossy=lossy_counts([lossy]))
    return analysis


def lossy_counts(parts: Iterable[Counter[str] | tuple[tuple[str, int], ...]]) -> tuple[
        tuple[str, int], ...]:
    """Lossy-conversion counts added up, as a Batch holds them (sorted by kind)."""
    total: Counter[str] = Counter()
    for part in parts:
        total.update(dict(part))
    return tuple(sorted((k, n) for k, n in total.items() if n))


class _Pass:
    """The state of one analysis: executions, requests, traces and notes so far."""

    def __init__(
        self, options: ExtractOptions, index: dict[tuple[str, str], SpanView], explain: bool
    ) -> None:
        self.options = options
        self.index = index
        self.explain = explain
        self.executions: dict[str, list[ToolCall]] = {}
        self.requests: list[ToolCall] = []
        self.unextracted: list[RejectedSpan] = []
        self.traces: dict[str, TraceAccumulator] = {}
        self.notes: dict[tuple[str, str], SpanNote] = {}
        self.scratch = SpanNote("", "", None, "", "span", 0)
        self.claim = Claims(conventions_for(options.conventions))

    def add(self, span: SpanView, found: tuple[str, str] | None) -> None:
        """Fold in one span and its conversation key (`conversation_source`)."""
        # Without explain, a span's note is written and never read: one scratch note serves.
        note = SpanNote(span.trace_id, span.span_id, span.parent_span_id, span.name, "span",
                        span.start_ns) if self.explain else self.scratch
        # a model call's input may also answer an approval (AI SDK 7: the refusal): both read
        contributed = self._tool(span, note) or (self._llm(span, note)
                                                 | self._approval(span, note))
        acc = self.traces.get(span.trace_id)
        if acc is None:
            acc = self.traces[span.trace_id] = TraceAccumulator(span.trace_id)
        acc.add(span, found, contributed)
        if self.explain:
            self._describe_trace_facts(span, found, note)
            self.notes[(span.trace_id, span.span_id)] = note

    def _tool(self, span: SpanView, note: SpanNote) -> bool:
        convention = self.claim(span)
        if convention is None:
            return False
        note.kind = f"tool ({convention.name})"
        reason = skipped(span)
        if reason is not None:
            note.why_not = f"skipped: {reason}"
            return False
        parent = self.index.get((span.trace_id, span.parent_span_id or ""))
        try:
            call = build_call(span, convention, parent)
        except NotExtractable as exc:
            self.unextracted.append(RejectedSpan(span.trace_id, span.span_id, span.name, str(exc)))
            note.why_not = f"unextracted: {exc}"
            return False
        if not self.options.keep_plumbing and is_plumbing(call.name):
            note.why_not = f"framework plumbing `{call.name}` (filtered; keep_plumbing keeps it)"
            return False
        self.executions.setdefault(span.trace_id, []).append(call)
        if self.explain:
            note.notes.append(f"call {describe(call)}")
        return True

    def _llm(self, span: SpanView, note: SpanNote) -> bool:
        if not is_llm_span(span):
            return False
        note.kind = "llm"
        source, calls = llm_requested_calls(span)
        kept = [c for c in calls if self.options.keep_plumbing or not is_plumbing(c.name)]
        if not kept:
            note.why_not = "model response without tool calls" if not calls else (
                "requested only framework plumbing")
            return False
        rows = request_rows(span, source, kept)
        self.requests.extend(rows)
        if self.explain:
            note.notes.extend(f"request {describe(r)} [{source}]" for r in rows)
        return True

    def _approval(self, span: SpanView, note: SpanNote) -> bool:
        calls = interrupt_calls(span)
        if not calls:
            return False
        if note.kind == "span":
            note.kind = "approval"
        self.executions.setdefault(span.trace_id, []).extend(calls)
        if self.explain:
            note.notes.extend(f"call {describe(c)} ({c.status})" for c in calls)
        return True

    def _describe_trace_facts(
        self, span: SpanView, found: tuple[str, str] | None, note: SpanNote
    ) -> None:
        if found is not None:
            note.notes.append(f"conversation key {found[0]!r} ({found[1]})")
        if is_agent_span(span):
            if note.kind == "span":
                note.kind = "agent"
            note.notes.append("turn root" if span.parent_span_id is None else "agent run (in turn)")
        if not note.notes and not note.why_not:
            note.why_not = "no tool call, request, conversation key or agent run"

    def _parent_of(self, trace_id: str) -> Callable[[str], str | None]:
        def parent(span_id: str) -> str | None:
            view = self.index.get((trace_id, span_id))
            return view.parent_span_id if view is not None else None

        return parent

    def finish(self, rejected: list[RejectedSpan], count: int) -> Analysis:
        calls: list[ToolCall] = []
        for trace_id, executions in self.executions.items():
            folded = collapse(executions, self._parent_of(trace_id))
            calls.extend(folded.calls)
            for inner, outer in folded.merged_into.items():
                note = self.notes.get((trace_id, inner))
                if note is not None:
                    note.notes = [f"nested duplicate of span {outer}: fills its missing fields"]
        calls.extend(self.requests)
        infos = tuple(acc.info(self.options.project) for acc in self.traces.values()
                      if acc.relevant)
        batch = Batch(tuple(calls), infos, tuple(rejected), tuple(self.unextracted), count)
        return Analysis(batch, list(self.notes.values()))


def describe(call: ToolCall) -> str:
    """`name(arguments)` with the call id and error, for humans."""
    arguments = call.arguments if call.arguments_raw is None else call.arguments_raw
    text = f"{call.name}({arguments!r})"
    if call.call_id:
        text += f" id={call.call_id}"
    if call.error:
        text += f" error={call.error[:80]!r}"
    return text
