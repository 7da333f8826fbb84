"""Every captured framework (tests/captures/*): extraction + reconciliation equal the ground truth.

The spans are what the real libraries emitted; `expected.json` is what the capture script knows
it did. Per turn: names, arguments, error flag, step and the model's call id, in request order.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tooltrail.collector.extract import ExtractOptions, extract
from tooltrail.collector.extract.approvals import interrupt_calls
from tooltrail.collector.extract.otlp import iter_spans, span_view
from tooltrail.collector.extract.reconcile import place, settle
from tooltrail.collector.extract_report import read_request
from tooltrail.collector.model import Batch, ToolCall
from tooltrail.collector.readers import read_logs
from tooltrail.collector.receivers.codec import JSON, decode_request

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
# Captures whose content is only in OTel log records (`logs.otlp.pb` beside the spans) are held
# to their ground truth with the records (test_log_records_and_spans_give_the_ground_truth).
LOG_FIXTURES = sorted(p.name for p in CAPTURES.iterdir() if (p / "logs.otlp.pb").exists())
FIXTURES = sorted(p.name for p in CAPTURES.iterdir()
                  if (p / "expected.json").exists() and p.name not in LOG_FIXTURES)
# Captures of issue 27 whose ground truth extraction does not reach yet: expected to fail (strict,
# so the mark must go when extraction is fixed).
ISSUE_27_PENDING: dict[str, str] = {}


def pending(names: list[str]) -> list[Any]:
    """`names` as parameters, those of ISSUE_27_PENDING marked xfail(strict)."""
    return [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=ISSUE_27_PENDING[n]))
            if n in ISSUE_27_PENDING else n for n in names]
# Semantic Kernel exports no conversation id (its thread id never reaches a span): each turn
# is a conversation of its own, keyed by its trace.
NO_CONVERSATION_ID = {"semantic_kernel", "semantic_kernel_approval"}
# AutoGen AgentChat has no conversation or session id at all.
NO_CONVERSATION_ID |= {"autogen_agentchat", "autogen_agentchat_team", "autogen_agentchat_openai"}
# Semantic Kernel writes the model's messages (its `gen_ai.choice` events) to OTel *logs*, not
# to spans: its chat spans carry no requested calls, so only the executions are in the trace.
# CrewAI under OpenInference (wrapper mode) has no LLM spans (the LiteLLM/OpenAI instrumentors'
# job).
NO_REQUESTS_IN_SPANS = {"semantic_kernel", "semantic_kernel_approval", "crewai_openinference"}
# AutoGen's own tracing has no span for a model call (the OpenAI instrumentation of its tracing
# guide adds one: `autogen_agentchat_openai`).
NO_REQUESTS_IN_SPANS |= {"autogen_agentchat", "autogen_agentchat_team"}
# Where parallel calls are neither overlapping siblings nor otherwise grouped in the tool spans,
# steps come only from the LLM spans' requests: ADK runs sync tools one after the other, and
# LangGraph puts each call under its own `tools` node span.
STEPS_NEED_REQUESTS = {"adk", "adk_legacy", "adk_noids", "langgraph_openinference",
                       "langgraph_langsmith_otel"}
# LangChain 1.x `create_agent` sends each call to its own `tools` node span too.
STEPS_NEED_REQUESTS |= {"langchain_agent_openinference"}
# Strands' interrupt names the waiting call by id only: without the model's request it is no call.
STEPS_NEED_REQUESTS |= {"strands_approval"}
# Mastra runs a step's calls one after the other too.
STEPS_NEED_REQUESTS |= {"mastra_otel"}
# LlamaIndex's FunctionAgent runs each call in its own `call_tool` workflow step span.
STEPS_NEED_REQUESTS |= {"llamaindex_openinference"}
# smolagents submits a step's calls to a thread pool, but a quick tool ends before the next one
# starts: its sibling TOOL spans need not overlap.
STEPS_NEED_REQUESTS |= {"smolagents_openinference"}
# AutoGen's tool spans carry no arguments: with its tracing guide's OpenAI instrumentation, only
# the model's requests on the `openai.chat` spans do.
ARGUMENTS_NEED_REQUESTS = {"autogen_agentchat_openai"}


def load(name: str) -> tuple[ExportTraceServiceRequest, dict[str, Any]]:
    folder = CAPTURES / name
    request = ExportTraceServiceRequest.FromString((folder / "spans.otlp.pb").read_bytes())
    return request, json.loads((folder / "expected.json").read_text())


def expected_turns(expected: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """Per turn, the calls as extraction must see them. Where the capture says the model's call ids
    reach no span (`"call_ids_in_spans": false`, CrewAI + OpenInference), none can be extracted;
    where a call's own id reaches no span, `span_call_id` is the only id the spans carry for it.
    Where no span of the call's trace carries its arguments (`"arguments_in_turn_trace": false`:
    AutoGen, whose tool spans have none and whose model calls have no span), each call has the
    empty arguments extraction stores for "none given"."""
    keys = ("name", "error", "step")
    ids = expected.get("call_ids_in_spans", True)
    arguments = expected.get("arguments_in_turn_trace", True)
    return [[{**{k: c[k] for k in keys}, "arguments": c["arguments"] if arguments else {},
              "call_id": c.get("span_call_id", c["call_id"]) if ids else None,
              "status": c.get("status", "error" if c["error"] else "ok")}
             for c in turn["calls"]]
            for turn in expected["turns"]]


def expected_keys(batch: Batch, expected: dict[str, Any]) -> list[str]:
    """Each turn's conversation key: the capture's, or the turn's trace id where the turn says
    `"conversation_id": null` (a trace the instrumentation gave no conversation id)."""
    traces = sorted(batch.traces, key=lambda t: t.start_ns)
    return [t.trace_id if turn.get("conversation_id", expected["conversation_id"]) is None
            else expected["conversation_id"] for t, turn in zip(traces, expected["turns"],
                                                                 strict=True)]


def as_expected(calls: list[ToolCall]) -> list[dict[str, Any]]:
    return [
        {"name": c.name, "arguments": c.arguments, "error": bool(c.error), "step": c.step,
         "call_id": c.call_id, "status": c.status}
        for c in calls
    ]


def turns_of(batch: Batch, *, keep_requests: bool = True) -> list[list[ToolCall]]:
    """Each turn's reconciled calls, turns in start order; the turns of one conversation
    settled together (a call executed in a later turn waited for approval in an earlier one)."""
    traces = sorted(batch.traces, key=lambda t: t.start_ns)
    placed = {}
    for key in dict.fromkeys(t.conversation_key for t in traces):
        mine = [t for t in traces if t.conversation_key == key]
        per_trace = [place([c for c in batch.calls if c.trace_id == t.trace_id
                            and (keep_requests or c.executed)]) for t in mine]
        placed.update(zip((t.trace_id for t in mine), settle(per_trace), strict=True))
    return [[p.resolved() for p in placed[t.trace_id]] for t in traces]


@pytest.mark.parametrize("name", pending(FIXTURES))
def test_trajectory_equals_ground_truth(name: str) -> None:
    request, expected = load(name)
    batch = extract(request)
    assert batch.rejected == () and batch.unextracted == ()
    turns = turns_of(batch)
    assert [as_expected(t) for t in turns] == expected_turns(expected)
    assert all(c.executed == (c.status not in {"pending", "rejected", "requested"}) and c.convention
               for turn in turns for c in turn)
    assert all(t.has_agent_root for t in batch.traces)  # the no-tool turn has its root too
    if not expected.get("results_in_turn_trace", True):  # AutoGen: no result in the turn
        assert all(c.result is None for turn in turns for c in turn)
    keys = [t.conversation_key for t in sorted(batch.traces, key=lambda t: t.start_ns)]
    if name in NO_CONVERSATION_ID:
        assert keys == [t.trace_id for t in sorted(batch.traces, key=lambda t: t.start_ns)]
    else:
        assert keys == expected_keys(batch, expected)


def with_logs(spans: Batch, logs: Batch) -> Batch:
    """One batch of what the spans and the log records contribute (as the store joins them)."""
    return Batch(spans.calls + logs.calls, spans.traces, spans.rejected + logs.rejected,
                 spans.unextracted, spans.span_count)


@pytest.mark.parametrize("name", LOG_FIXTURES)
def test_log_records_and_spans_give_the_ground_truth(name: str) -> None:
    """Content capture to events only: the spans name the calls, the log records carry the
    model's requests (the arguments); with both, whichever arrives first, the ground truth."""
    request, expected = load(name)
    assert expected.get("content_in_logs") is True
    records = ExportLogsServiceRequest.FromString((CAPTURES / name / "logs.otlp.pb").read_bytes())
    logs, count = read_logs(records, ExtractOptions())
    assert count and logs.rejected == ()
    twin = decode_request((CAPTURES / name / "logs.otlp.json").read_bytes(), JSON, "logs")
    assert twin == records  # the OTLP/JSON twin, decoded as the receiver does
    spans = extract(request)
    assert spans.rejected == () and spans.unextracted == ()
    bare = [as_expected(t) for t in turns_of(spans)]
    assert bare != expected_turns(expected)  # the spans alone lack the arguments
    for batch in (with_logs(spans, logs), Batch(logs.calls + spans.calls, spans.traces)):
        assert [as_expected(t) for t in turns_of(batch)] == expected_turns(expected)
    keys = [t.conversation_key for t in sorted(spans.traces, key=lambda t: t.start_ns)]
    assert keys == expected_keys(spans, expected)


@pytest.mark.parametrize("name", FIXTURES)
def test_otlp_json_twin_extracts_the_same(name: str) -> None:
    request, _ = load(name)
    twin, refused = read_request(CAPTURES / name / "spans.otlp.json")
    assert not refused and extract(twin) == extract(request)


@pytest.mark.parametrize("name", pending(sorted(set(FIXTURES) - STEPS_NEED_REQUESTS)))
def test_steps_inferred_from_tool_spans_alone(name: str) -> None:
    """Without the LLM spans' requests, overlapping sibling tool spans still share a step.
    A call no tool span shows (`"tool_span": false`: requested, never executed in its turn)
    is then not there at all, and a call whose arguments only the request has has none."""
    request, expected = load(name)
    turns = turns_of(extract(request), keep_requests=False)
    got = [[{**c, "call_id": None} for c in as_expected(t)] for t in turns]
    spans = [[c.get("tool_span", True) for c in t["calls"]] for t in expected["turns"]]
    unread = {"arguments": {}} if name in ARGUMENTS_NEED_REQUESTS else {}
    want = [[{**c, "call_id": None, **unread} for c, shown in zip(turn, shown_in, strict=True)
             if shown]
            for turn, shown_in in zip(expected_turns(expected), spans, strict=True)]
    by_step = [sorted(turn, key=lambda c: (c["step"], json.dumps(c, sort_keys=True)))
               for turn in got]
    assert by_step == [sorted(turn, key=lambda c: (c["step"], json.dumps(c, sort_keys=True)))
                       for turn in want]


# Where no request reaches a span there is nothing pending to count (the test holds trivially).
@pytest.mark.parametrize("name", [*pending(sorted(set(FIXTURES) - NO_REQUESTS_IN_SPANS)),
                                  *sorted(set(FIXTURES) & NO_REQUESTS_IN_SPANS)])
def test_each_turn_has_one_request_row_per_model_call(name: str) -> None:
    """Requests are stored as not-executed rows `{llm span}#{j}`; each is answered once."""
    request, expected = load(name)
    batch = extract(request)
    requests = [c for c in batch.calls if not c.executed]
    wanted = 0 if name in NO_REQUESTS_IN_SPANS else sum(
        c.get("requested_in_turn", True) for t in expected["turns"] for c in t["calls"])
    assert len(requests) == wanted
    assert all("#" in r.span_id and r.parent_span_id == r.span_id.split("#")[0]
               for r in requests)


def test_two_id_spaces_do_not_double_a_call() -> None:
    """ADK 2.x default schema with a model that gives no ids (as Gemini): the LLM span says
    `get_weather_0`, the tool span `adk-<uuid>`. Each call is one executed call, no request is
    left "never executed", and the execution's id (ADK's own, in its events) is kept."""
    request, expected = load("adk_noids")
    batch = extract(request)
    requests = {c.call_id for c in batch.calls if not c.executed}
    executions = {c.call_id for c in batch.calls if c.executed}
    assert "get_weather_0" in requests and not requests & executions  # two id spaces
    turns = turns_of(batch)
    assert all(c.executed for turn in turns for c in turn)
    assert [len(t) for t in turns] == [len(t["calls"]) for t in expected["turns"]]
    assert turns[0][0].call_id == expected["turns"][0]["calls"][0]["call_id"]


def test_call_executed_in_a_later_turn_was_pending() -> None:
    """An instrumentation that gives the waiting call no result (the issue's "arguments and no
    result"): the ADK approval capture with its "requires confirmation" results removed. A call
    a later turn executes under the same id was pending; the one never answered is all that
    can be told apart from an execution without a result."""
    request, _ = load("adk_approval")
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                kept = [a for a in span.attributes if not (
                    a.key == "gen_ai.tool.call.result" and "requires confirmation" in
                    a.value.string_value)]
                del span.attributes[:]
                span.attributes.extend(kept)
    turns = turns_of(extract(request))
    assert [[(c.call_id, c.status, c.executed) for c in t] for t in turns] == [
        [("call_del_alice", "pending", False)], [("call_del_alice", "ok", True)],
        [("call_del_bob", "pending", False)], [("call_del_bob", "rejected", False)],
        [("call_del_carol", "ok", True)],
    ]


def test_request_executed_in_a_later_turn_was_pending() -> None:
    """A run that stops before the tool shows only the model's request (LangChain's
    `HumanInTheLoopMiddleware` interrupt, its node span hidden here): the request a later turn
    executes under its call id was pending, and the execution takes its uncollapsed arguments."""
    request, _ = load("langchain_agent_approval")
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                if span.name == "HumanInTheLoopMiddleware.after_model":
                    span.name = "after_model"
    turns = turns_of(extract(request))
    assert [[(c.call_id, c.status, c.executed, c.arguments) for c in t] for t in turns] == [
        [("call_del_alice", "pending", False, {"login": "alice"})],
        [("call_del_alice", "ok", True, {"login": "alice"})],
        [("call_del_bob", "requested", False, {"login": "bob"})], [],
        [("call_del_carol", "requested", False, {"login": "carol"})],
    ]


# garbage: ids and names that are no strings (unhashable), in a tool answer saying "denied"
UNHASHABLE = ('[{"role": "tool", "parts": [{"type": "tool_call_response", "id": [1], "name": ["x"],'
              ' "response": {"denied": true}}, {"type": "tool_call", "id": {}, "name": []}]}]')


@pytest.mark.parametrize(("name", "span_name", "key"), [
    ("langchain_agent_approval", "HumanInTheLoopMiddleware.after_model", "input.value"),
    ("langchain_agent_approval", "HumanInTheLoopMiddleware.after_model", "output.value"),
    ("pydantic_ai_approval", "invoke_agent account_assistant", "final_result"),
    ("agent_framework_approval", "invoke_agent account_assistant", "gen_ai.output.messages"),
    ("agent_framework_approval", "invoke_agent account_assistant", "gen_ai.input.messages"),
    ("pydantic_ai_approval", "chat scripted-fn", "model_request_parameters"),
    ("pydantic_ai_approval", "chat scripted-fn", "gen_ai.input.messages"),
    ("vercel_ai_7", "invoke_agent travel_assistant", "gen_ai.output.messages"),
    ("vercel_ai_7", "chat scripted-model", "gen_ai.input.messages"),
    ("vercel_ai_7_legacy", "ai.generateText", "ai.response.toolCalls"),
    ("vercel_ai_7_legacy", "ai.generateText.doGenerate", "ai.prompt.messages"),
    ("mastra_otel", "invoke_agent travel_assistant", "mastra.agent_run.output"),
    ("mastra_otel", "invoke_agent travel_assistant", "mastra.agent_run.input"),
])
@pytest.mark.parametrize("garbage", ['{"calls": [', '{"messages": 3}', "[1, null, {}]", "",
                                     UNHASHABLE])
def test_malformed_approval_marks_are_ignored(
        name: str, span_name: str, key: str, garbage: str) -> None:
    """The spans that say a call waits or was refused, with that attribute cut or mangled:
    extraction neither fails nor invents a call; the model's requests are still there."""
    request, expected = load(name)
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                for a in span.attributes:
                    if span.name == span_name and a.key == key:
                        a.value.string_value = garbage
    batch = extract(request)
    assert batch.rejected == () and batch.unextracted == ()
    marks = [c for c in batch.calls if c.executed and c.status in {"pending", "rejected"}]
    assert all(c.name == "delete_account" and c.call_id is not None
               and c.arguments in ({"login": c.call_id[9:]}, None)  # Mastra's marks have none
               for c in marks)  # whatever is left is one of the real calls
    assert len([c for c in batch.calls if not c.executed]) == sum(
        c.get("requested_in_turn", True) for t in expected["turns"] for c in t["calls"])


OPENAI_AGENTS_REFUSALS = [
    ("openai_agents_approval", "response", "input.value"),
    ("openai_agents_otel_approval", "chat gpt-4o-mini", "gen_ai.input.messages"),
    ("openai_agents_traceloop_approval", "openai.response", "gen_ai.input.messages"),
]


def _replace_in(request: ExportTraceServiceRequest, span_name: str, key: str, old: str,
                new: str) -> int:
    """Replace `old` by `new` in the string attribute `key` of the spans named `span_name`;
    how many spans had it."""
    count = 0
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                for a in span.attributes:
                    if span.name == span_name and a.key == key and old in a.value.string_value:
                        a.value.string_value = a.value.string_value.replace(old, new)
                        count += 1
    return count


@pytest.mark.parametrize(("name", "span_name", "key"), OPENAI_AGENTS_REFUSALS)
def test_openai_agents_refusal_is_the_sdk_text(name: str, span_name: str, key: str) -> None:
    """OpenAI Agents: a refusal is read from the SDK's own answer to the model. With the app's
    own text (`state.reject(item, rejection_message=...)`) nothing says the call was refused:
    bob's call stays pending (not executed); alice's approval and carol's wait are unchanged."""
    request, _ = load(name)
    assert _replace_in(request, span_name, key, "Tool execution was not approved.",
                       "Keep bob's account.") >= 1  # later turns repeat it as history
    turns = turns_of(extract(request))
    assert [[(c.call_id, c.status, c.executed) for c in t] for t in turns] == [
        [("call_del_alice", "ok", True)], [("call_del_bob", "pending", False)],
        [("call_del_carol", "pending", False)],
    ]


def test_semantic_kernel_refusal_reads_as_the_apps_result() -> None:
    """Semantic Kernel's documented consent filter answers a refused call with the app's own
    FunctionResult inside SK's ordinary `execute_tool` span: no mark of SK's says it was refused,
    so it stays an executed call whose result is the app's text (the user's answers are only in
    the ground truth)."""
    request, expected = load("semantic_kernel_approval")
    turns = turns_of(extract(request))
    assert expected["user_answers"] == {"call_del_alice": "approved", "call_del_bob": "rejected"}
    assert [[(c.call_id, c.status, c.executed, c.result) for c in t] for t in turns] == [
        [("call_del_alice", "ok", True, {"deleted": "alice"})],
        [("call_del_bob", "ok", True, "The account deletion was not approved by the user")],
    ]
    # Another framework's refusal mark, written by the app, is the app's text too.
    crewai = "Tool execution blocked by hook. Tool: accounts-delete_account"
    assert _replace_in(request, "execute_tool accounts-delete_account", "gen_ai.tool.call.result",
                       "The account deletion was not approved by the user", crewai) == 1
    bob = turns_of(extract(request))[1][0]
    assert (bob.status, bob.executed, bob.result) == ("ok", True, crewai)


@pytest.mark.parametrize(("name", "span_name", "key"), [
    ("openai_agents_approval", "delete_account", "input.value"),
    ("openai_agents_otel_approval", "execute_tool delete_account", "gen_ai.tool.call.arguments"),
    ("openai_agents_traceloop_approval", "delete_account.tool", "gen_ai.tool.call.arguments"),
])
def test_a_later_call_of_other_arguments_does_not_answer_the_waiting_one(
        name: str, span_name: str, key: str) -> None:
    """OpenAI Agents resumed in the asking trace: the approved execution answers the waiting
    call by name and arguments (no call id on either span). An execution of other arguments
    in that trace is another call: alice's stays pending, mallory's runs unrequested."""
    request, _ = load(name)
    spans = [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans
             if s.name == span_name and any(a.key == "output.value" or a.key ==
                                            "gen_ai.tool.call.result" for a in s.attributes)]
    executed = min(spans, key=lambda s: s.start_time_unix_nano)  # alice's approved execution
    (attr,) = [a for a in executed.attributes if a.key == key]
    attr.value.string_value = attr.value.string_value.replace("alice", "mallory")
    first = turns_of(extract(request))[0]
    assert [(c.arguments, c.call_id, c.status, c.executed) for c in first] == [
        ({"login": "alice"}, "call_del_alice", "pending", False),
        ({"login": "mallory"}, None, "ok", True),
    ]


@pytest.mark.parametrize(("name", "span_name", "key"), OPENAI_AGENTS_REFUSALS)
@pytest.mark.parametrize("bad_id", ["[1]", "{}", "null", "3"])
def test_openai_agents_refusal_without_an_id_is_ignored(
        name: str, span_name: str, key: str, bad_id: str) -> None:
    """A refusal whose call id is no string names no call: it refuses nothing."""
    request, _ = load(name)
    id_key = '"call_id":' if key == "input.value" else '"id":'
    assert sum(_replace_in(request, span_name, key, f'{id_key}{space}"call_del_bob"',
                           f"{id_key}{bad_id}") for space in ("", " ")) >= 1
    turns = turns_of(extract(request))
    assert [c.status for t in turns for c in t] == ["ok", "pending", "pending"]


def _set(request: ExportTraceServiceRequest, span_name: str, key: str, value: str,
         trace_index: int = 0) -> None:
    """Set a string attribute of the spans named `span_name` in the `trace_index`-th trace."""
    spans = [span for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans]
    trace = sorted({s.trace_id for s in spans},
                   key=lambda t: min(s.start_time_unix_nano for s in spans if s.trace_id == t))
    for span in spans:
        if span.name == span_name and span.trace_id == trace[trace_index]:
            (attr,) = [a for a in span.attributes if a.key == key]
            attr.value.Clear()
            attr.value.string_value = value


def test_ai_sdk_run_stopped_after_executing_its_calls_waits_for_nothing() -> None:
    """AI SDK 7: a run whose last step's calls ran and that then stopped (`stopWhen`) also ends
    with finish reason `tool-calls` and those calls in its output: its tool spans ran them, so
    they stay executed; only a call no span ran is pending."""
    request, expected = load("vercel_ai_7")
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                for a in span.attributes:
                    if span.name == "invoke_agent travel_assistant" and (
                            a.key == "gen_ai.response.finish_reasons"):
                        a.value.array_value.values[0].string_value = "tool-calls"
    get_time = ('[{"role":"assistant","parts":[{"type":"tool_call","id":"call_t_paris",'
                '"name":"get_time","arguments":{"city":"Paris"}}],"finish_reason":"tool_call"}]')
    _set(request, "invoke_agent travel_assistant", "gen_ai.output.messages", get_time)
    turns = turns_of(extract(request))
    assert [as_expected(t) for t in turns] == expected_turns(expected)
    assert turns[0][2].name == "get_time" and turns[0][2].executed


def test_a_tool_span_wins_over_a_refusal_read_from_messages() -> None:
    """Strands: every error toolResult of a cycle's `gen_ai.choice` reads as a refusal
    (`cancel_tool` runs no span); where a tool span ran the call (the failing
    `convert_currency`), the execution is the call, with its own error."""
    request, expected = load("strands")
    refusals = [c for span, resource, scope in iter_spans(request)
                for c in interrupt_calls(span_view(span, resource, scope))]
    assert [(c.name, c.call_id, c.status) for c in refusals] == [
        ("convert_currency", "call_fx", "rejected")]
    turns = turns_of(extract(request))
    assert [as_expected(t) for t in turns] == expected_turns(expected)
    (fx,) = [c for t in turns for c in t if c.call_id == "call_fx"]
    assert fx.executed and fx.status == "error" and "rejected" not in (fx.error or "")


@pytest.mark.parametrize("garbage", ['[{"toolResult": {"toolUseId": [1], "status": "error"}}]',
                                     '[{"toolResult": 3}, 1]', "[", ""])
def test_malformed_strands_refusal_is_ignored(garbage: str) -> None:
    """Strands' refusal is read from the cycle's `gen_ai.choice` event: mangled, it neither fails
    nor invents a call (the refused call is then only its request, never executed)."""
    request, _ = load("strands_approval")
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                for event in span.events if span.name == "execute_event_loop_cycle" else ():
                    for a in event.attributes:
                        if event.name == "gen_ai.choice" and a.key in ("tool.result", "message"):
                            a.value.string_value = garbage
    batch = extract(request)
    assert batch.rejected == () and batch.unextracted == ()
    turns = turns_of(batch)
    assert [[(c.call_id, c.status) for c in t] for t in turns[2:4]] == [
        [("call_del_bob", "pending")], []]
