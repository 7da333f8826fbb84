"""What the captures under tests/captures show of each framework issue 13 names: the audit
table in tests/captures/README.md ("Coverage"), computed here from each capture's ground truth
(`expected.json`, which `test_extract_fixtures` holds extraction to) and, for the conversation,
from the keys extraction finds in the spans. `python -m tests.collector.extract.capture_coverage`
prints the table; `test_capture_coverage` holds the README to it.

A framework row is the union of its captures: the three-turn script shows sequential and
parallel calls, a failing tool and a turn without tool call; the approval scripts show the
round trip. The approval cell names what the trace lets tooltrail see of the user's answers:
`approved` (pending, then executed in a later turn of the same conversation, or executed in
its asking trace), `refused` (rejected) and `unanswered` (pending, never answered).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tooltrail.collector.extract import extract

CAPTURES = Path(__file__).resolve().parents[2] / "captures"

# The frameworks issue 13 lists ("Done when"), then issue 27's, each with the captures that
# record it.
FRAMEWORKS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Vercel AI SDK 7, `OpenTelemetry`", ("vercel_ai_7",)),
    ("Vercel AI SDK 7, `LegacyOpenTelemetry`", ("vercel_ai_7_legacy",)),
    ("Google ADK 2.x, default schema", ("adk", "adk_noids", "adk_approval")),
    ("OpenAI Agents SDK + OpenInference", ("openai_agents_openinference",
                                           "openai_agents_approval")),
    ("OpenAI Agents SDK + Traceloop", ("openai_agents_traceloop",
                                       "openai_agents_traceloop_approval")),
    ("OpenAI Agents SDK + OTel GenAI", ("openai_agents_otel", "openai_agents_otel_approval")),
    ("Pydantic AI", ("pydantic_ai", "pydantic_ai_approval")),
    ("LangChain / LangGraph 1.x", ("langchain_agent_openinference", "langchain_agent_approval",
                                   "langgraph_openinference")),
    ("Strands", ("strands", "strands_approval")),
    ("CrewAI", ("crewai_openinference", "crewai_openinference_approval")),
    ("Semantic Kernel", ("semantic_kernel", "semantic_kernel_approval")),
    ("Microsoft Agent Framework", ("agent_framework", "agent_framework_approval")),
    ("OpenInference JS (AI SDK 7)", ("vercel_ai_7_openinference",)),
    ("Mastra (JS)", ("mastra_otel",)),
    ("LlamaIndex `FunctionAgent` + OpenInference", ("llamaindex_openinference",)),
    ("smolagents `ToolCallingAgent` + OpenInference", ("smolagents_openinference",)),
    ("AutoGen AgentChat `AssistantAgent`, native", ("autogen_agentchat",
                                                   "autogen_agentchat_team",
                                                   "autogen_agentchat_openai")),
)
# Captures of releases or modes the issue does not name (older majors, other conventions).
OTHERS = ("adk_legacy", "adk_log_events", "crewai_openinference_events", "langgraph_langsmith_otel",
          "pydantic_ai_mcp", "pydantic_ai_v2", "strands_latest", "vercel_ai")
COLUMNS = ("sequential", "parallel", "failing tool", "no-tool turn", "second turn",
           "approval round trip")
_APPROVE = frozenset({"approved", "yes"})
_REFUSE = frozenset({"denied", "declined", "rejected", "no"})


@dataclass
class Coverage:
    """What one capture (or the union of a framework's) shows."""

    shown: set[str] = field(default_factory=set)
    answers: set[str] = field(default_factory=set)  # approved / refused / unanswered

    def add(self, other: Coverage) -> None:
        self.shown |= other.shown
        self.answers |= other.answers


def _turn_key(expected: dict[str, Any], turn: dict[str, Any]) -> Any:
    return turn.get("conversation_id", expected["conversation_id"])


def _answers(expected: dict[str, Any]) -> set[str]:
    """What the ground truth shows of the user's answers (see the module docstring)."""
    said = expected.get("user_answers") or {}
    seen: dict[str, list[tuple[Any, str]]] = {}  # call id -> (conversation, status) per turn
    for turn in expected["turns"]:
        for call in turn["calls"]:
            status = call.get("status", "error" if call["error"] else "ok")
            seen.setdefault(call["call_id"], []).append((_turn_key(expected, turn), status))
    found: set[str] = set()
    for call_id, statuses in seen.items():
        waited = [key for key, status in statuses if status == "pending"]
        answered = [(key, status) for key, status in statuses if status != "pending"]
        if any(status == "rejected" for _, status in answered):
            found.add("refused")
        if any(status == "ok" and (key in waited or said.get(call_id) in _APPROVE)
               for key, status in answered if key is not None):
            found.add("approved")
        if waited and not answered and said.get(call_id) not in _APPROVE | _REFUSE:
            found.add("unanswered")
    return found


def capture(name: str) -> Coverage:
    """One capture's coverage."""
    folder = CAPTURES / name
    expected = json.loads((folder / "expected.json").read_text())
    shown: set[str] = set()
    for turn in expected["turns"]:
        ran = [c for c in turn["calls"] if c.get("status") not in ("pending", "rejected")]
        steps = [c["step"] for c in ran]
        if len(set(steps)) >= 2:
            shown.add("sequential")
        if len(steps) > len(set(steps)):
            shown.add("parallel")
        if any(c["error"] for c in ran):
            shown.add("failing tool")
        if not turn["calls"]:
            shown.add("no-tool turn")
    request = ExportTraceServiceRequest.FromString((folder / "spans.otlp.pb").read_bytes())
    keys = [t.conversation_key for t in extract(request).traces if t.conversation_key != t.trace_id]
    if len(keys) > len(set(keys)):
        shown.add("second turn")  # two traces under one conversation key from the spans
    answers = _answers(expected)
    if answers:
        shown.add("approval round trip")
    return Coverage(shown, answers)


def cell(column: str, coverage: Coverage) -> str:
    if column == "approval round trip" and coverage.answers:
        return ", ".join(a for a in ("approved", "refused", "unanswered") if a in coverage.answers)
    return "yes" if column in coverage.shown else "**no**"


def table() -> str:
    """The README's audit table (markdown)."""
    lines = ["| framework | captures | " + " | ".join(COLUMNS) + " |",
             "|---" * (len(COLUMNS) + 2) + "|"]
    for framework, names in FRAMEWORKS:
        total = Coverage()
        for name in names:
            total.add(capture(name))
        listed = ", ".join(f"`{n}`" for n in names) or "none"
        lines.append(f"| {framework} | {listed} | "
                     + " | ".join(cell(c, total) for c in COLUMNS) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
