"""Human-in-the-loop approvals: a call that waits for the user is `pending`, a refused one
`rejected`; neither was executed (the matcher sees them as not executed, REST shows the status).

A call that needs approval shows in the turn the model requested it as a tool span with the
call's arguments and either no result or a placeholder result, and, once the user answers, as a
second tool span with the same call id in a later turn. Two ways to tell:

- the span says so (`approval_status`): Google ADK answers a `require_confirmation` tool's
  call with `{"error": "This tool call requires confirmation, please approve or reject."}`
  until the user confirms, and with `{"error": "This tool call is rejected."}` when the user
  refuses (google-adk 2.13 `tools/_confirmation_utils.py`; capture `tests/captures/adk_approval`);
  CrewAI's result for a call its before-tool-call hook blocked is `Tool execution blocked by
  hook. Tool: {name}` (rejected, on CrewAI's OpenInference spans only; capture
  `tests/captures/crewai_openinference_approval`);
- OpenInference's OpenAI Agents instrumentation: a TOOL span that ended OK with no
  `output.value` never ran to completion (it writes the output of every finished call, an
  error's too); the OpenAI Agents SDK ends the function span of a `needs_approval` call so at
  the interruption. The OTel GenAI and Traceloop instrumentations: an `execute_tool` span with
  arguments and no result (`waiting_span`). The resumed run is in the trace only when the app
  runs both in one `trace()`: the approved call is then a second tool span (`dedup` folds the
  two), a refusal the SDK's text in the next model call's input (`_openai_agents_refused`;
  captures `tests/captures/openai_agents_approval`, `..._otel_approval`, `..._traceloop_approval`);
- a later turn executes the same call id (`reconcile.settle`): an earlier span of it that has
  neither a result nor an error was the call waiting, not an execution; so was an earlier
  request that no span executed (a run stopped before the tool, its own mark hidden);
- LangChain 1.x `HumanInTheLoopMiddleware` (LangGraph interrupts) runs no tool span while it
  waits: its `HumanInTheLoopMiddleware.after_model` node span (OpenInference CHAIN) records
  the interrupt as an `exception` event `langgraph.errors.GraphInterrupt`, and its
  `input.value` state ends with the model's message whose `tool_calls` wait (all of them: no
  tool runs before the user's decisions). On a rejection, the resumed run's span of that node
  outputs a ToolMessage `status="error"` for the refused call, and no tool span follows
  (langchain 1.5 `agents/middleware/human_in_the_loop.py`; capture
  `tests/captures/langchain_agent_approval`). `interrupt_calls` reads both;
- Pydantic AI deferred tools (`requires_approval=True`): the asking run runs no tool span and
  ends with a `DeferredToolRequests` output, which its `invoke_agent` span writes as
  `final_result` (`{"calls": [...], "approvals": [{"tool_name", "args", "tool_call_id"}]}`,
  pydantic-ai 2.68; capture `tests/captures/pydantic_ai_approval`). A `ToolDenied` answer is
  a `tool_call_response` in the resumed run's chat input to a tool of kind `unapproved`
  (`model_request_parameters`), with no tool span: rejected (`_pydantic_ai_denied`);
- Microsoft Agent Framework `@tool(approval_mode="always_require")`: the asking run runs no tool
  span; its `invoke_agent` span's `gen_ai.output.messages` carries a `function_approval_request`
  part (with the `function_call`: `call_id`, `name`, `arguments`), and the resumed run's
  `invoke_agent` `gen_ai.input.messages` the user's `function_approval_response` (`approved`);
  a refusal runs no tool span either (agent-framework-core 1.23; capture
  `tests/captures/agent_framework_approval`);
- Strands interrupts (a `BeforeToolCallEvent` hook calling `event.interrupt`): the asking run
  runs no tool span; its root `invoke_agent` span's `gen_ai.choice` event has
  `finish_reason=interrupt` and the interrupts (Python repr) whose ids carry the tool use id,
  not the tool's name: a pending row with the id alone, named by the request it pairs with
  (strands-agents 1.62; capture `tests/captures/strands_approval`). A `cancel_tool` refusal runs
  no tool span: the cycle's `gen_ai.choice` event has its error toolResult (`_strands_cancelled`);
- Vercel AI SDK 7 `toolApproval` (`@ai-sdk/otel` 1.0, both integrations): the asking run ends
  with finish reason `tool-calls` on its root and the request in its output, no tool span
  (pending); a refusal is an `execution-denied` tool result in the next run's model input
  (rejected); the approved call runs in the next run (under `LegacyOpenTelemetry` with no
  tool span: its `tool-result` in that run's model input is the execution) (capture
  `tests/captures/vercel_ai_7*`);
- Mastra `requireApproval` (`@mastra/otel-exporter` 1.4): the asking `agent_run` span's output
  says `suspended` / `tool-call-approval` with the call id (pending); a decline resumes as a
  nested `agent_run` in the same trace whose input is `{"approved": false, ...}` (rejected);
  an approval runs the tool span there (capture `tests/captures/mastra_otel`).

Several of these read a waiting or refused call from a run's messages; a tool span of the same
call in the same trace wins over them (`dedup`: executed over refused over waiting).

An approval that never comes stays pending. The plumbing call that asks the user
(`adk_request_confirmation`) is filtered with the rest of the framework plumbing (`analyze`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from tooltrail.collector.extract.conventions import beside
from tooltrail.collector.extract.decoding import as_arguments, decode
from tooltrail.collector.extract.otlp import SpanView
from tooltrail.collector.model import ToolCall

PENDING = "pending"
REJECTED = "rejected"
UNEXECUTED = frozenset({PENDING, REJECTED})

# The results frameworks give a call in place of its execution (exact texts, not guesses).
_PENDING_TEXTS = frozenset({"This tool call requires confirmation, please approve or reject."})
_REJECTED_TEXTS = frozenset({"This tool call is rejected."})
# CrewAI's result for a call a before-tool-call hook (its documented approval gate) blocked,
# followed by the tool's name (crewai 1.15 `agents/agent_executor.py`); its event-listener spans
# record it as the tool span's output (capture `tests/captures/crewai_openinference_approval`).
# CrewAI's mark only on CrewAI's instrumentation's spans: elsewhere it is text an app chose
# (a Semantic Kernel consent filter's refusal is the app's own result, `semantic_kernel_approval`).
CREWAI_HOOK_BLOCKED = "Tool execution blocked by hook. Tool: "
CREWAI_OPENINFERENCE_SCOPE = "openinference.instrumentation.crewai"


def _placeholder_text(result: Any) -> str | None:
    if isinstance(result, dict) and set(result) == {"error"} and isinstance(result["error"], str):
        return result["error"].strip()
    return None


def approval_status(result: Any, scope: str) -> str | None:
    """`pending` / `rejected` when the span's result is a framework's approval placeholder;
    `scope` is the span's instrumentation scope."""
    if (isinstance(result, str) and result.startswith(CREWAI_HOOK_BLOCKED)
            and scope.startswith(CREWAI_OPENINFERENCE_SCOPE)):
        return REJECTED
    text = _placeholder_text(result)
    if text in _PENDING_TEXTS:
        return PENDING
    if text in _REJECTED_TEXTS:
        return REJECTED
    return None


OPENAI_AGENTS_GENAI_SCOPE = "opentelemetry.instrumentation.genai.openai_agents"
# Traceloop's (OpenLLMetry) OpenAI Agents instrumentation: its tool spans also follow the GenAI
# convention and carry `gen_ai.tool.call.result` for every finished call, a failed one's too
# (0.62.4; captures `tests/captures/openai_agents_traceloop`, `..._traceloop_approval`).
OPENAI_AGENTS_TRACELOOP_SCOPE = "opentelemetry.instrumentation.openai_agents"
# Only this OpenInference instrumentation is known to write every finished call's output:
# others (CrewAI's event-listener mode, a tool returning nothing) end TOOL spans of executed
# calls without `output.value`, which must stay executed.
OPENAI_AGENTS_OPENINFERENCE_SCOPE = "openinference.instrumentation.openai_agents"


def waiting_span(convention: str, scope: str, attributes: dict[str, Any], failed: bool) -> bool:
    """A tool span that ended without result and without error where the instrumentation
    writes the result of every finished call: OpenInference's OpenAI Agents instrumentation
    (`output.value`), and the OTel GenAI and Traceloop OpenAI Agents instrumentations (with
    content capture on: arguments but no
    `gen_ai.tool.call.result`: they copy the SDK's function-span output, the SDK's text of
    whatever the tool returned))."""
    if failed:
        return False
    if convention == "openinference":
        return scope == OPENAI_AGENTS_OPENINFERENCE_SCOPE and "output.value" not in attributes
    return (scope in (OPENAI_AGENTS_GENAI_SCOPE, OPENAI_AGENTS_TRACELOOP_SCOPE)
            and "gen_ai.tool.call.arguments" in attributes
            and "gen_ai.tool.call.result" not in attributes)


def unexecuted(call: ToolCall) -> bool:
    """True for a pending or rejected call: the tool did not run."""
    return call.status in UNEXECUTED


LANGCHAIN_HITL_NODE = "HumanInTheLoopMiddleware.after_model"
GRAPH_INTERRUPT = "langgraph.errors.GraphInterrupt"


def _messages(span: SpanView, key: str) -> list[dict[str, Any]]:
    value, _ = decode(span.attributes.get(key))
    messages = value.get("messages") if isinstance(value, dict) else None
    return [m for m in messages if isinstance(m, dict) and isinstance(m.get("data"), dict)] \
        if isinstance(messages, list) else []


def _tool_calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    calls = message["data"].get("tool_calls") if message.get("type") == "ai" else None
    return [c for c in calls if isinstance(c, dict) and isinstance(c.get("name"), str)] \
        if isinstance(calls, list) else []


# (name, call id, arguments, status, error) of one waiting or refused call; a name that is
# not a string (absent from a malformed span) drops the call
_Found = tuple[Any, Any, Any, str, "str | None"]


def _langchain_hitl(span: SpanView) -> list[_Found]:
    if any(e.name == "exception" and e.attributes.get("exception.type") == GRAPH_INTERRUPT
           for e in span.events):
        messages = _messages(span, "input.value")
        return [(c["name"], c.get("id"), c.get("args"), PENDING, None)
                for c in (_tool_calls(messages[-1]) if messages else [])]
    messages = _messages(span, "output.value")
    asked = _by_id([c for m in messages for c in _tool_calls(m)], "id")
    found: list[_Found] = []
    for m in messages:
        data = m["data"]
        if m.get("type") == "tool" and data.get("status") == "error" \
                and _text(data.get("tool_call_id")) in asked:
            c, content = asked[data["tool_call_id"]], data.get("content")
            found.append((c["name"], c.get("id"), c.get("args"), REJECTED,
                          f"rejected: {content}" if isinstance(content, str) else "rejected"))
    return found


PYDANTIC_AI_SCOPE = "pydantic-ai"


def _pydantic_ai_deferred(span: SpanView) -> list[_Found]:
    text = span.attributes.get("final_result")
    if not isinstance(text, str) or not text.startswith('{"calls":'):
        return []
    value, _ = decode(text)
    approvals = value.get("approvals") if isinstance(value, dict) else None
    return [(a["tool_name"], a.get("tool_call_id"), as_arguments(a.get("args"))[0], PENDING, None)
            for a in approvals if isinstance(a, dict) and isinstance(a.get("tool_name"), str)] \
        if isinstance(approvals, list) else []


def _pydantic_ai_denied(span: SpanView) -> list[_Found]:
    """A resumed run's model call: this turn's `tool_call_response` to a tool that needs approval
    (`kind: "unapproved"` in its `model_request_parameters`) answers the user's decision. A
    `ToolDenied` runs no tool span, so it is a refusal unless a tool span ran the call (the
    approved one; `dedup` keeps the execution)."""
    params = span.attributes.get("model_request_parameters")
    if not isinstance(params, str) or '"unapproved"' not in params:
        return []
    value, _ = decode(params)
    tools = value.get("function_tools") if isinstance(value, dict) else None
    gated = {_text(t.get("name")) for t in _dicts(tools) if t.get("kind") == "unapproved"} - {None}
    parts = _message_parts(_this_turn(decode(span.attributes.get("gen_ai.input.messages"))[0]))
    asked = _by_id([p for p in parts if p.get("type") == "tool_call"], "id")
    found: list[_Found] = []
    for p in parts:
        if p.get("type") == "tool_call_response" and _text(p.get("name")) in gated:
            result = p.get("result")
            found.append((p.get("name"), p.get("id"),
                          as_arguments(asked.get(_text(p.get("id")), {}).get("arguments"))[0],
                          REJECTED,
                          f"rejected: {result}" if isinstance(result, str) else "rejected"))
    return found


AGENT_FRAMEWORK_SCOPE = "agent_framework"


def _message_parts(messages: Any) -> list[dict[str, Any]]:
    """The parts of GenAI-convention messages (`[{"role", "parts": [...]}]`)."""
    parts: list[Any] = []
    for m in messages if isinstance(messages, list) else []:
        mine = m.get("parts") if isinstance(m, dict) else None
        parts.extend(mine if isinstance(mine, list) else [])
    return [p for p in parts if isinstance(p, dict)]


def _parts(span: SpanView, key: str, kind: str) -> list[dict[str, Any]]:
    text = span.attributes.get(key)
    if not isinstance(text, str) or kind not in text:
        return []  # most spans: no need to decode their messages
    return [p for p in _message_parts(decode(text)[0]) if p.get("type") == kind
            and isinstance(p.get("function_call"), dict)]


def _agent_framework(span: SpanView) -> list[_Found]:
    def found(part: dict[str, Any], status: str) -> _Found:
        call = part["function_call"]
        return (call.get("name"), call.get("call_id"), as_arguments(call.get("arguments"))[0],
                status, "rejected" if status == REJECTED else None)

    asked = [found(p, PENDING) for p in _parts(span, "gen_ai.output.messages",
                                               "function_approval_request")]
    refused = [found(p, REJECTED) for p in _parts(span, "gen_ai.input.messages",
                                                  "function_approval_response")
               if p.get("approved") is False]
    return [*asked, *refused]


STRANDS_SCOPE = "strands.telemetry.tracer"
# strands `hooks/events.py` BeforeToolCallEvent: `v1:before_tool_call:{toolUseId}:{uuid5(name)}`
_STRANDS_INTERRUPT_ID = re.compile(r"v1:before_tool_call:(.+?):[0-9a-f]{8}-[0-9a-f-]{27}")


def _strands_interrupt(span: SpanView) -> list[_Found]:
    """The calls a Strands run stopped for: its `gen_ai.choice` event with
    `finish_reason=interrupt` lists the interrupts, whose ids name the tool use but not the
    tool (name left empty: the model's request of that id supplies it, `reconcile`)."""
    for e in span.events:
        if e.name == "gen_ai.choice" and e.attributes.get("finish_reason") == "interrupt":
            text = e.attributes.get("message")
            ids = _STRANDS_INTERRUPT_ID.findall(text) if isinstance(text, str) else []
            return [("", call_id, None, PENDING, None) for call_id in dict.fromkeys(ids)]
    return []


# Vercel AI SDK 7 (`ai` 7.0, `@ai-sdk/otel` 1.0): `OpenTelemetry` traces as "gen_ai" (GenAI
# conventions), `LegacyOpenTelemetry` as "ai" (the `ai.*` spans).
AI_SDK_SCOPE = "gen_ai"
AI_SDK_LEGACY_SCOPE = "ai"
AI_SDK_ROOTS = frozenset({"ai.generateText", "ai.streamText"})
AI_SDK_LEGACY_LLM = frozenset({"ai.generateText.doGenerate", "ai.streamText.doStream"})
# `@ai-sdk/otel`'s rendering of an `execution-denied` tool result: `{denied: true, reason}`
_AI_SDK_DENIED = frozenset({"denied", "reason"})


_TOOL_ANSWERS = frozenset({"tool_call_response", "tool-result"})


def _said_by_user(message: dict[str, Any]) -> bool:
    """A user message that is not only tool results (Pydantic AI sends those as `user`)."""
    parts = message.get("parts", message.get("content"))
    return message.get("role") == "user" and not (
        isinstance(parts, list) and parts
        and all(isinstance(p, dict) and p.get("type") in _TOOL_ANSWERS for p in parts))


def _this_turn(messages: Any) -> list[dict[str, Any]]:
    """The messages after the user's last one: what this turn added to the history (a model
    call's input repeats the whole conversation; a resumed run adds no user message)."""
    if not isinstance(messages, list):
        return []
    mine = [m for m in messages if isinstance(m, dict)]
    last = max((i for i, m in enumerate(mine) if _said_by_user(m)), default=-1)
    return mine[last + 1:]


def _ai_sdk(span: SpanView) -> list[_Found]:
    """A run that ended on tool calls it did not execute (finish reason `tool-calls` on the
    run's root: `toolApproval` stopped it, or a tool the app runs itself) is waiting: its
    calls are pending (a call its tool span ran stays executed, `dedup`). A model call whose
    input answers a call of this turn with `execution-denied` (the user's
    `tool-approval-response` said `approved: false`) shows the refusal: rejected."""
    attrs = span.attributes
    operation = attrs.get("gen_ai.operation.name")
    if operation == "invoke_agent" and span.parent_span_id is None:
        if attrs.get("gen_ai.response.finish_reasons") != ["tool-calls"]:
            return []
        messages, _ = decode(attrs.get("gen_ai.output.messages"))
        return [(p.get("name"), p.get("id"), as_arguments(p.get("arguments"))[0], PENDING, None)
                for p in _message_parts(messages) if p.get("type") == "tool_call"]
    text = attrs.get("gen_ai.input.messages")
    if operation != "chat" or not isinstance(text, str) or '"denied":true' not in text:
        return []
    parts = _message_parts(_this_turn(decode(text)[0]))
    asked = _by_id([p for p in parts if p.get("type") == "tool_call"], "id")
    found: list[_Found] = []
    for p in parts:
        response = p.get("response")
        if p.get("type") == "tool_call_response" and isinstance(response, dict) \
                and response.get("denied") is True and set(response) <= _AI_SDK_DENIED:
            call = asked.get(_text(p.get("id")), {})
            found.append((call.get("name"), p.get("id"), as_arguments(call.get("arguments"))[0],
                          REJECTED, "rejected"))
    return found


def _ai_sdk_legacy(span: SpanView) -> list[tuple[_Found, Any]]:
    """`_ai_sdk` on the `ai.*` spans, each row with the call's result: the root `ai.generateText`
    has `ai.response.finishReason` and `ai.response.toolCalls` (pending); a `doGenerate` span's
    `ai.prompt.messages` has this turn's tool answers: a `tool-result` whose output is
    `{"type": "execution-denied"}` is the refusal, any other one an execution (its `value` the
    result, `error-*` a failure). `LegacyOpenTelemetry` starts a tool span only inside a step
    (`@ai-sdk/otel` 1.0 `legacy-open-telemetry.ts` `onToolExecutionStart`), so the approved
    call, which the resumed run executes before its first step, is seen only as its result in
    that step's input; an answer whose tool span exists folds into it (`dedup`, same call id)."""
    attrs = span.attributes
    if span.parent_span_id is None and attrs.get("ai.operationId") in AI_SDK_ROOTS:
        if attrs.get("ai.response.finishReason") != "tool-calls":
            return []
        return [((c.get("toolName"), c.get("toolCallId"), as_arguments(c.get("input"))[0],
                  PENDING, None), None)
                for c in _dicts(decode(attrs.get("ai.response.toolCalls"))[0])]
    text = attrs.get("ai.prompt.messages")
    # only a prompt that ends with tool answers (a later step, or a resumed run) has any
    if attrs.get("ai.operationId") not in AI_SDK_LEGACY_LLM or not isinstance(text, str) \
            or not text.startswith('{"role":"tool"', text.rfind('{"role":')):
        return []
    messages = _this_turn(decode(text)[0])
    asked = _by_id([p for m in messages if m.get("role") == "assistant"
                    for p in _dicts(m.get("content")) if p.get("type") == "tool-call"],
                   "toolCallId")
    return [_ai_sdk_answer(p, asked.get(_text(p.get("toolCallId")), {}))
            for m in messages if m.get("role") == "tool" for p in _dicts(m.get("content"))
            if p.get("type") == "tool-result" and isinstance(p.get("output"), dict)]


def _ai_sdk_answer(part: dict[str, Any], call: dict[str, Any]) -> tuple[_Found, Any]:
    """One AI SDK `tool-result` part (`ToolResultOutput`: `text`/`json`/`content` value,
    `error-text`/`error-json`, `execution-denied`) as a row and its result."""
    output, name, call_id = part["output"], part.get("toolName"), part.get("toolCallId")
    arguments = as_arguments(call.get("input"))[0]
    kind, value = output.get("type"), output.get("value")
    if kind == "execution-denied":
        return (name, call_id, arguments, REJECTED, "rejected"), None
    if isinstance(kind, str) and kind.startswith("error-"):
        error = value if isinstance(value, str) else json.dumps(value)
        return (name, call_id, arguments, "error", error or "error"), None
    return (name, call_id, arguments, "ok", None), value


def _dicts(value: Any) -> list[dict[str, Any]]:
    """The objects of a JSON array (nothing for anything else)."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _text(value: Any) -> str | None:
    """A string id as itself; anything else (a malformed span's list or object) as None."""
    return value if isinstance(value, str) else None


def _by_id(items: list[dict[str, Any]], key: str) -> dict[str | None, dict[str, Any]]:
    """Objects by their string `key` (the first of each id; others are not indexed, so a
    lookup of `_text(...)`, None for a malformed id, finds nothing)."""
    found: dict[str | None, dict[str, Any]] = {}
    for item in items:
        if (k := _text(item.get(key))) is not None:
            found.setdefault(k, item)
    return found


MASTRA_SCOPE = "@mastra/otel-exporter"


def _mastra(span: SpanView) -> list[_Found]:
    """Mastra `requireApproval` tools: the asking run's `agent_run` output is
    `{"status": "suspended", "reason": "tool-call-approval", "toolName", "toolCallId"}`
    (pending); `declineToolCallGenerate` resumes as a nested `agent_run` whose input is
    `{"approved": false, "toolName", "toolCallId"}` (rejected; an approval's `true` is followed
    by the call's own tool span)."""
    output, _ = decode(span.attributes.get("mastra.agent_run.output"))
    found: list[_Found] = []
    if isinstance(output, dict) and output.get("status") == "suspended" \
            and output.get("reason") == "tool-call-approval":
        found.append((output.get("toolName"), output.get("toolCallId"), None, PENDING, None))
    answer, _ = decode(span.attributes.get("mastra.agent_run.input"))
    if isinstance(answer, dict) and answer.get("approved") is False:
        reason = answer.get("reason")
        found.append((answer.get("toolName"), answer.get("toolCallId"), None, REJECTED,
                      f"rejected: {reason}" if isinstance(reason, str) else "rejected"))
    return found


STRANDS_CYCLE = "execute_event_loop_cycle"


def _strands_cancelled(span: SpanView) -> list[_Found]:
    """Strands' `cancel_tool` (a `BeforeToolCallEvent` hook's refusal, as on a "no" to an
    interrupt): the tool runs no span (strands 1.62 `tools/executors/_executor.py` answers before
    the span is started), and the cycle's `gen_ai.choice` event has the call in `message` and an
    `error` toolResult with the hook's message in `tool.result`. Each error result becomes a
    refused row; a tool span that ran the call wins over it (`dedup`), so a failing tool stays
    a failed execution."""
    found: list[_Found] = []
    for e in span.events:
        text = e.attributes.get("tool.result") if e.name == "gen_ai.choice" else None
        if not isinstance(text, str) or '"error"' not in text:
            continue
        uses = [b.get("toolUse") for b in _dicts(decode(e.attributes.get("message"))[0])]
        asked = _by_id([u for u in uses if isinstance(u, dict)], "toolUseId")
        for block in _dicts(decode(text)[0]):
            result = block.get("toolResult")
            if not isinstance(result, dict) or result.get("status") != "error":
                continue
            use = asked.get(_text(result.get("toolUseId")), {})
            content = [c.get("text") for c in result.get("content") or [] if isinstance(c, dict)]
            message = " ".join(t for t in content if isinstance(t, str))
            found.append((use.get("name"), result.get("toolUseId"), use.get("input"), REJECTED,
                          f"rejected: {message}" if message else "rejected"))
    return found


# The OpenAI Agents SDK's answer to a refused call, sent to the model as the call's output unless
# the app gives its own (`RunState.reject(..., rejection_message=)`, `RunConfig.
# tool_error_formatter`): openai-agents 0.24 `agents/tool.py` DEFAULT_APPROVAL_REJECTION_MESSAGE.
OPENAI_AGENTS_REFUSAL = "Tool execution was not approved."


def _openai_agents_refused(span: SpanView) -> list[_Found]:
    """A resumed run's model call whose input answers a call of this turn with the SDK's
    refusal: rejected. The GenAI instrumentations (OTel's, Traceloop's) write the input as
    `gen_ai.input.messages` (`tool_call_response` parts), OpenInference as the Responses-API
    items in `input.value` (`function_call_output`). The refused call runs no tool span
    (openai-agents 0.24 resumes it in `run_internal/turn_resolution.py`, spanless). Traceloop
    puts the item id (`fc_...`), not the call id, on the history's `tool_call` parts: the row
    then names no tool, and `dedup` folds it into the call that waited."""
    attrs = span.attributes
    text = attrs.get("gen_ai.input.messages")
    if isinstance(text, str) and OPENAI_AGENTS_REFUSAL in text:
        parts = _message_parts(_this_turn(decode(text)[0]))
        asked = _by_id([p for p in parts if p.get("type") == "tool_call"], "id")
        answers = [(p.get("id"), p.get("response")) for p in parts
                   if p.get("type") == "tool_call_response"]
    else:
        text = attrs.get("input.value")
        if not isinstance(text, str) or OPENAI_AGENTS_REFUSAL not in text:
            return []
        items = _this_turn(decode(text)[0])
        asked = _by_id([i for i in items if i.get("type") == "function_call"], "call_id")
        answers = [(i.get("call_id"), i.get("output")) for i in items
                   if i.get("type") == "function_call_output"]
    found: list[_Found] = []
    for call_id, output in answers:
        if output == OPENAI_AGENTS_REFUSAL and _text(call_id):  # an id, or no call to name
            call = asked.get(_text(call_id), {})
            found.append((call.get("name") or "", call_id,
                          as_arguments(call.get("arguments"))[0], REJECTED,
                          f"rejected: {OPENAI_AGENTS_REFUSAL}"))
    return found


# the scopes a test of `interrupt_calls` names (every one but the last tests the scope)
_INTERRUPT_SCOPES = frozenset({PYDANTIC_AI_SCOPE, STRANDS_SCOPE, AGENT_FRAMEWORK_SCOPE,
                               AI_SDK_SCOPE, AI_SDK_LEGACY_SCOPE, MASTRA_SCOPE})


def interrupt_calls(span: SpanView) -> list[ToolCall]:
    """The calls a span shows waiting for the user (`pending`) or refused (`rejected`) where
    no tool span of theirs exists: a LangChain `HumanInTheLoopMiddleware` node span (the run
    stopped at its interrupt, or the resumed run answered a call with an error ToolMessage),
    or Pydantic AI's `invoke_agent` span whose `final_result` is the `DeferredToolRequests`
    the run ended with (its `approvals`; the `calls` to execute externally are not approvals),
    or Agent Framework's `invoke_agent` span (a `function_approval_request` part in its output
    messages: pending; a `function_approval_response` with `approved: false` in its input
    messages: rejected), or the Pydantic AI, Strands, AI SDK 7, Mastra and OpenAI Agents spans
    the module docstring names (AI SDK 7 legacy: with the executions its tool answers show);
    [] for any other span. Rows `{span}#{j}` (one span, several calls)."""
    results: list[Any] = []  # the results of executions read from a run's messages
    if span.scope not in _INTERRUPT_SCOPES and span.name != LANGCHAIN_HITL_NODE:
        # the one test below that holds whatever the scope: most spans end here
        found = _openai_agents_refused(span)
        if not found:
            return []
        convention = "genai" if "gen_ai.input.messages" in span.attributes else "openinference"
    elif span.name == LANGCHAIN_HITL_NODE:
        found, convention = _langchain_hitl(span), "openinference"
    elif span.scope == PYDANTIC_AI_SCOPE and "final_result" in span.attributes:
        found, convention = _pydantic_ai_deferred(span), "genai"
    elif span.scope == PYDANTIC_AI_SCOPE and "model_request_parameters" in span.attributes:
        found, convention = _pydantic_ai_denied(span), "genai"
    elif span.scope == STRANDS_SCOPE and span.parent_span_id is None and span.events:
        found, convention = _strands_interrupt(span), "genai"
    elif span.scope == STRANDS_SCOPE and span.events and (
            span.attributes.get("gen_ai.operation.name") == STRANDS_CYCLE):
        found, convention = _strands_cancelled(span), "genai"
    elif span.scope == AGENT_FRAMEWORK_SCOPE and (
            span.attributes.get("gen_ai.operation.name") == "invoke_agent"):
        found, convention = _agent_framework(span), "genai"
    elif span.scope == AI_SDK_SCOPE:
        found, convention = _ai_sdk(span), "genai"
    elif span.scope == AI_SDK_LEGACY_SCOPE:
        answers = _ai_sdk_legacy(span)
        found, results, convention = [f for f, _ in answers], [r for _, r in answers], "genai"
    elif span.scope == MASTRA_SCOPE and span.attributes.get("mastra.span.type") == "agent_run":
        found, convention = _mastra(span), "genai"
    elif found := _openai_agents_refused(span):
        convention = "genai" if "gen_ai.input.messages" in span.attributes else "openinference"
    else:
        return []
    return [
        ToolCall(
            trace_id=span.trace_id, span_id=f"{span.span_id}#{j}", parent_span_id=span.span_id,
            name=name, call_id=call_id if isinstance(call_id, str) else None,
            arguments=arguments, arguments_raw=None, result=results[j] if results else None,
            error=error,
            status=status, start_ns=span.start_ns, end_ns=span.end_ns,
            convention=convention, attributes=beside(span.attributes),
        )
        for j, (name, call_id, arguments, status, error) in enumerate(found)
        if isinstance(name, str)
    ]
