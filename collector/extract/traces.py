"""What spans say about their trace: conversation key, turn root, agents (docs/conventions.md)."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tooltrail.collector.extract.otlp import SpanView
from tooltrail.collector.model import KEY_FROM_ROOT, KEY_FROM_SPAN, KEY_FROM_TRACE, TraceInfo
from tooltrail.collector.projects import DEFAULT_PROJECT, PROJECT_ATTRIBUTE, project_problem

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
# GenAI operations that set an agent up and run nothing: a root span of one is no turn (AutoGen
# AgentChat's agent constructor opens a `create_agent` span outside any run, a trace of its own).
SETUP_OPERATIONS = frozenset({"create_agent"})
AGENT_ROOT_NAMES = frozenset(
    {"Agent workflow", "Agent Workflow", "ai.generateText", "ai.streamText"}
)
AGENT_KINDS = frozenset({"workflow", "agent"})  # traceloop.span.kind
ADK_SCOPE = "gcp.vertex.agent"  # its legacy root span `invocation` carries no attributes
GENAI_PREFIXES = ("gen_ai.", "openinference.", "llm.", "traceloop.", "ai.", "gcp.vertex.agent.")
MAX_SELECTOR_ATTRIBUTES = 64
_SELECTOR_TYPES = (str, int, float)  # bool is an int
# A conversation key is stored as sent and looked up as sent; a unique index holds it, and
# PostgreSQL's B-tree refuses entries past about 2.7 kB, so a longer key is refused, not cut.
MAX_KEY_BYTES = 1024


@functools.lru_cache(maxsize=32)
def key_names(extra_keys: tuple[str, ...]) -> tuple[str, ...]:
    """The attributes that may carry a conversation id, in the order they are tried."""
    return tuple(k for k in (*CONVERSATION_KEYS, *extra_keys) if k not in NOT_CONVERSATION_KEYS)


def _key_in(attrs: dict[str, Any], names: tuple[str, ...], where: str) -> tuple[str, str] | None:
    for key in names:
        value = attrs.get(key)
        if value is not None:
            text = str(value)
            if text.strip():
                return text, where + key
    return None


def conversation_source(span: SpanView, extra_keys: Sequence[str]) -> tuple[str, str] | None:
    """(conversation id, the attribute it came from) of a span or its resource, if any. The id
    is the value as sent (a number as its decimal text); only blank values count as absent."""
    names = key_names(tuple(extra_keys))
    return _key_in(span.attributes, names, "") or _key_in(span.resource, names, "resource ")


class KeyFinder:
    """`conversation_source` for the spans of one request: each resource's own key is looked
    up once, however many spans it has."""

    def __init__(self, extra_keys: Sequence[str]) -> None:
        self.names = key_names(tuple(extra_keys))
        self.any_name = frozenset(self.names)  # a span with none of them has its resource's
        # id(resource) → (resource, its key): the resource is held so that its id stays its own
        self._resources: dict[int, tuple[dict[str, Any], tuple[str, str] | None]] = {}

    def __call__(self, span: SpanView) -> tuple[str, str] | None:
        attributes = span.attributes
        if not self.any_name.isdisjoint(attributes):
            found = _key_in(attributes, self.names, "")
            if found is not None:
                return found
        resource = span.resource
        known = self._resources.get(id(resource))
        if known is None:
            known = self._resources[id(resource)] = (
                resource, _key_in(resource, self.names, "resource "))
        return known[1]


def key_problem(span: SpanView, found: tuple[str, str] | None) -> str | None:
    """Why the span's conversation key `found` (its `conversation_source`) or the project its
    resource names cannot be stored as sent, or None."""
    project = span.resource.get(PROJECT_ATTRIBUTE)
    if project is not None:
        problem = project_problem(project, f"resource attribute {PROJECT_ATTRIBUTE}")
        if problem is not None:
            return problem
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


def is_agent_span(span: SpanView) -> bool:
    """True for spans that mark a top-level or nested agent run."""
    attrs = span.attributes
    operation, kind = attrs.get("gen_ai.operation.name"), attrs.get("traceloop.span.kind")
    if isinstance(operation, str) and operation in AGENT_OPERATIONS:  # a list or map is no name
        return True
    if attrs.get("openinference.span.kind") == "AGENT":
        return True
    if isinstance(kind, str) and kind in AGENT_KINDS:
        return True
    if span.name in AGENT_ROOT_NAMES:
        return True
    if span.parent_span_id is None:
        if span.name == "invocation" and span.scope == ADK_SCOPE:
            return True
        if isinstance(operation, str) and operation in SETUP_OPERATIONS:
            return False
        return any(key.startswith(GENAI_PREFIXES) for key in attrs)
    return False


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

    def add(self, span: SpanView, found: tuple[str, str] | None, is_tool: bool) -> None:
        """Fold one span of this trace in; `found` is its `conversation_source`."""
        if not self.service:
            self.service = span.service
        if self.project is None:
            self.project = span.resource.get(PROJECT_ATTRIBUTE)
        start, end, root = span.start_ns, span.end_ns, span.parent_span_id is None
        if root and self.root_span_id is None:
            self.root_span_id = span.span_id
        if found is not None:
            rank = KEY_FROM_ROOT if root else KEY_FROM_SPAN
            if rank > self.rank or (rank == self.rank and start < self.key_start):
                self.key, self.rank, self.key_start = found[0], rank, start
            self.relevant = True
        agent_name = span.attributes.get("gen_ai.agent.name")
        if isinstance(agent_name, str) and agent_name:
            self.agents.add(agent_name)
        if is_agent_span(span):
            self.has_agent_root = self.relevant = True
            if self.agent_start is None or start < self.agent_start:
                self.agent_start = start
            if self.agent_end is None or end > self.agent_end:
                self.agent_end = end
            self._keep_attributes(span.attributes)
        if is_tool:
            self.relevant = True
        if self.any_start is None or start < self.any_start:
            self.any_start = start
        if self.any_end is None or end > self.any_end:
            self.any_end = end
        if not self.attributes or root:
            self._keep_attributes(span.resource)

    def _keep_attributes(self, source: dict[str, Any]) -> None:
        kept = self.attributes
        for key, value in source.items():
            if len(kept) >= MAX_SELECTOR_ATTRIBUTES:
                return
            if isinstance(value, _SELECTOR_TYPES) and not key.startswith("gen_ai.input"):
                kept.setdefault(key, value)

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
