"""What spans say about their trace: conversation key, turn root, agents (docs/conventions.md)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from collector.extract.otlp import SpanView
from collector.model import KEY_FROM_ROOT, KEY_FROM_SPAN, KEY_FROM_TRACE, TraceInfo
from collector.projects import DEFAULT_PROJECT, PROJECT_ATTRIBUTE, project_problem

CONVERSATION_KEYS = (
    "gen_ai.conversation.id",
    "session.id",
    "gcp.vertex.agent.session_id",
    "langfuse.session.id",
)
# Never a conversation key, even when configured: `mcp.session.id` names the MCP transport
# session between one client and one server, which outlives or cuts across user conversations
# (semantic-conventions-genai, docs/gen-ai/mcp.md and docs/registry/attributes/mcp.md).
NOT_CONVERSATION_KEYS = frozenset({"mcp.session.id"})
AGENT_OPERATIONS = frozenset({"invoke_agent", "invoke_workflow"})
AGENT_ROOT_NAMES = frozenset(
    {"Agent workflow", "Agent Workflow", "ai.generateText", "ai.streamText"}
)
AGENT_KINDS = frozenset({"workflow", "agent"})  # traceloop.span.kind
ADK_SCOPE = "gcp.vertex.agent"  # its legacy root span `invocation` carries no attributes
GENAI_PREFIXES = ("gen_ai.", "openinference.", "llm.", "traceloop.", "ai.", "gcp.vertex.agent.")
MAX_SELECTOR_ATTRIBUTES = 64
# A conversation key is stored as sent and looked up as sent; a unique index holds it, and
# PostgreSQL's B-tree refuses entries past about 2.7 kB, so a longer key is refused, not cut.
MAX_KEY_BYTES = 1024


def conversation_source(span: SpanView, extra_keys: Sequence[str]) -> tuple[str, str] | None:
    """(conversation id, the attribute it came from) of a span or its resource, if any. The id
    is the value as sent (a number as its decimal text); only blank values count as absent."""
    for where, source in (("", span.attributes), ("resource ", span.resource)):
        for key in (*CONVERSATION_KEYS, *extra_keys):
            if key in NOT_CONVERSATION_KEYS:
                continue
            value = source.get(key)
            if value is not None and str(value).strip():
                return str(value), where + key
    return None


def key_problem(span: SpanView, extra_keys: Sequence[str]) -> str | None:
    """Why the span's conversation key (or the project its resource names) cannot be stored as
    sent, or None."""
    project = span.resource.get(PROJECT_ATTRIBUTE)
    if project is not None:
        problem = project_problem(project, f"resource attribute {PROJECT_ATTRIBUTE}")
        if problem is not None:
            return problem
    found = conversation_source(span, extra_keys)
    if found is None:
        return None
    return key_size_problem(found[0], f"conversation key ({found[1]})")


def key_size_problem(key: str, what: str = "conversation key") -> str | None:
    """Why `key` is too long to store as sent (every way in refuses it alike), or None."""
    size = len(key.encode("utf-8", "surrogatepass"))
    if size > MAX_KEY_BYTES:
        return f"{what} is {size} bytes of UTF-8; at most {MAX_KEY_BYTES} are stored"
    return None


def derived_key(key: str) -> str:
    """A key tooltrail makes from others (the turn key of captured calls: a prefix, the
    conversation key, an id) short enough to index and still unique: past MAX_KEY_BYTES it keeps
    a prefix and its hash. Keys users send are never shortened (they are refused instead)."""
    raw = key.encode("utf-8", "surrogatepass")
    if len(raw) <= MAX_KEY_BYTES:
        return key
    digest = hashlib.sha256(raw).hexdigest()
    return f"{raw[:MAX_KEY_BYTES - 80].decode('utf-8', 'ignore')}…sha256:{digest}"


def conversation_key(span: SpanView, extra_keys: Sequence[str]) -> str | None:
    """The conversation id a span (or its resource) carries, if any."""
    found = conversation_source(span, extra_keys)
    return found[0] if found else None


def is_agent_span(span: SpanView) -> bool:
    """True for spans that mark a top-level or nested agent run."""
    attrs = span.attributes
    if attrs.get("gen_ai.operation.name") in AGENT_OPERATIONS:
        return True
    if attrs.get("openinference.span.kind") == "AGENT":
        return True
    if attrs.get("traceloop.span.kind") in AGENT_KINDS:
        return True
    if span.name in AGENT_ROOT_NAMES:
        return True
    if span.parent_span_id is None:
        if span.name == "invocation" and span.scope == ADK_SCOPE:
            return True
        return any(key.startswith(GENAI_PREFIXES) for key in attrs)
    return False


def _lo(current: int | None, value: int) -> int:
    return value if current is None else min(current, value)


def _hi(current: int | None, value: int) -> int:
    return value if current is None else max(current, value)


@dataclass(slots=True)
class TraceAccumulator:
    """Collects one trace's facts from the spans of one request."""

    trace_id: str
    key: str | None = None
    rank: int = KEY_FROM_TRACE
    key_start: int = 0
    service: str | None = None
    agents: set[str] = field(default_factory=set)
    agent_start: int | None = None
    agent_end: int | None = None
    any_start: int | None = None
    any_end: int | None = None
    has_agent_root: bool = False
    relevant: bool = False
    attributes: dict[str, Any] = field(default_factory=dict)
    root_span_id: str | None = None
    project: str | None = None  # the first resource naming one (PROJECT_ATTRIBUTE)

    def add(self, span: SpanView, extra_keys: Sequence[str], is_tool: bool) -> None:
        """Fold one span of this trace in."""
        self.service = self.service or span.service
        if self.project is None:
            self.project = span.resource.get(PROJECT_ATTRIBUTE)
        if span.parent_span_id is None:
            self.root_span_id = self.root_span_id or span.span_id
        key = conversation_key(span, extra_keys)
        if key is not None:
            rank = KEY_FROM_ROOT if span.parent_span_id is None else KEY_FROM_SPAN
            if rank > self.rank or (rank == self.rank and span.start_ns < self.key_start):
                self.key, self.rank, self.key_start = key, rank, span.start_ns
            self.relevant = True
        agent_name = span.attributes.get("gen_ai.agent.name")
        if isinstance(agent_name, str) and agent_name:
            self.agents.add(agent_name)
        if is_agent_span(span):
            self.has_agent_root = self.relevant = True
            self.agent_start = _lo(self.agent_start, span.start_ns)
            self.agent_end = _hi(self.agent_end, span.end_ns)
            self._keep_attributes(span.attributes)
        if is_tool:
            self.relevant = True
        self.any_start = _lo(self.any_start, span.start_ns)
        self.any_end = _hi(self.any_end, span.end_ns)
        if not self.attributes or span.parent_span_id is None:
            self._keep_attributes(span.resource)

    def _keep_attributes(self, source: dict[str, Any]) -> None:
        for key, value in source.items():
            if len(self.attributes) >= MAX_SELECTOR_ATTRIBUTES:
                return
            if isinstance(value, str | int | float | bool) and not key.startswith("gen_ai.input"):
                self.attributes.setdefault(key, value)

    def info(self, project: str = DEFAULT_PROJECT) -> TraceInfo:
        """The TraceInfo this trace's spans add up to (in `project` when no resource of them
        names one)."""
        start = self.agent_start if self.agent_start is not None else self.any_start or 0
        end = self.agent_end if self.agent_end is not None else self.any_end or start
        return TraceInfo(
            trace_id=self.trace_id,
            turn_key=self.trace_id,
            conversation_key=self.key or self.trace_id,
            key_rank=self.rank if self.key else KEY_FROM_TRACE,
            service=self.service,
            agents=frozenset(self.agents),
            start_ns=start,
            end_ns=end,
            has_agent_root=self.has_agent_root,
            attributes=self.attributes,
            root_span_id=self.root_span_id,
            project=self.project or project,
        )
