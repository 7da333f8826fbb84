"""The customer-service agent: Pydantic AI with its own OpenTelemetry instrumentation, six tools
over the shop's SQLite database, and a scripted model (`FunctionModel`) in place of an LLM, so
a run is offline and deterministic: no network, no key.

The script says what the model answers at each step of each turn: a list of tool calls (one
model response; several are parallel calls) or a reply, whose text may be computed from what
the tools just returned. The tools run for real against the database.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from pydantic_ai import Agent, InstrumentationSettings, ModelRetry, RunContext
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from store import Refused, Shop

AGENT_NAME = "customer_service"
INSTRUCTIONS = (
    "You are the customer-service assistant of an online shop. Before revealing account data "
    "or changing an order, verify the customer: send_verification_code, then verify_customer "
    "with the code they give you. Confirm cancellations with the customer first. Answer order "
    "questions from get_order, never from memory. Browsing products needs no verification."
)


@dataclass(frozen=True, slots=True)
class Call:
    name: str
    args: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Say:
    """The model's reply ending a turn: text, or text made from the last tool returns."""

    text: str | Callable[[list[Any]], str]


Step = Sequence[Call] | Say


@dataclass(frozen=True, slots=True)
class Turn:
    user: str
    steps: Sequence[Step]


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """What one turn did, from the framework's own messages (for explicit capture)."""

    user: str
    reply: str
    calls: list[dict[str, Any]]


def _returns(messages: list[ModelMessage]) -> list[Any]:
    last = messages[-1]
    if not isinstance(last, ModelRequest):
        return []
    return [p.content for p in last.parts if isinstance(p, ToolReturnPart)]


def scripted_model(turns: Sequence[Turn]) -> tuple[FunctionModel, list[Step]]:
    """The model playing `turns`, and its steps not played yet (empty once all were)."""
    steps: list[Step] = [s for turn in turns for s in turn.steps]
    ids = itertools.count(1)

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = steps.pop(0)
        if isinstance(step, Say):
            text = step.text if isinstance(step.text, str) else step.text(_returns(messages))
            return ModelResponse(parts=[TextPart(text)])
        return ModelResponse(parts=[
            ToolCallPart(tool_name=call.name, args=json.dumps(call.args),
                         tool_call_id=f"call-{next(ids)}")
            for call in step])

    return FunctionModel(respond, model_name="scripted"), steps


def _refusal(exc: Refused) -> ModelRetry:
    return ModelRetry(f"refused: {exc}")


def build_agent(model: FunctionModel, provider: TracerProvider | None) -> Agent[Shop, str]:
    """The agent; `provider` None runs it uninstrumented (its calls are then captured
    explicitly by whoever runs it)."""
    capabilities = [] if provider is None else [Instrumentation(
        settings=InstrumentationSettings(tracer_provider=provider, include_content=True))]
    agent: Agent[Shop, str] = Agent(model, deps_type=Shop, name=AGENT_NAME,
                                    instructions=INSTRUCTIONS, capabilities=capabilities)

    @agent.tool
    def lookup_customer(ctx: RunContext[Shop], email: str) -> dict[str, Any]:
        """Look up a verified customer's profile by email."""
        try:
            return ctx.deps.lookup_customer(email)
        except Refused as exc:
            raise _refusal(exc) from exc

    @agent.tool
    def get_order(ctx: RunContext[Shop], order_id: str) -> dict[str, Any]:
        """An order's status, items and total by its id (ORD-…)."""
        return ctx.deps.get_order(order_id)

    @agent.tool
    def search_products(ctx: RunContext[Shop], query: str,
                        max_price: float | None = None) -> list[dict[str, Any]]:
        """Search the catalogue by keyword, optionally up to a price."""
        return ctx.deps.search_products(query, max_price)

    @agent.tool
    def cancel_order(ctx: RunContext[Shop], order_id: str, confirm: bool) -> dict[str, Any]:
        """Cancel a processing order of the verified customer; confirm=true once they agreed."""
        try:
            return ctx.deps.cancel_order(order_id, confirm)
        except Refused as exc:
            raise _refusal(exc) from exc

    @agent.tool
    def send_verification_code(ctx: RunContext[Shop], email: str) -> dict[str, Any]:
        """Email the customer a one-time verification code."""
        try:
            return ctx.deps.send_verification_code(email)
        except Refused as exc:
            raise _refusal(exc) from exc

    @agent.tool
    def verify_customer(ctx: RunContext[Shop], email: str, code: str) -> dict[str, Any]:
        """Check the code the customer read from their email."""
        try:
            return ctx.deps.verify_customer(email, code)
        except Refused as exc:
            raise _refusal(exc) from exc

    return agent


def _calls(messages: list[ModelMessage]) -> list[dict[str, Any]]:
    """The turn's tool calls with their results or errors, as ArkSim's AgentResponse has them."""
    outcomes: dict[str, dict[str, Any]] = {}
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, ToolReturnPart):
                    # a tool's ModelRetry comes back as a return with outcome "retried"
                    side = "result" if part.outcome == "success" else "error"
                    outcomes[part.tool_call_id] = {side: part.content}
    return [{"id": part.tool_call_id, "name": part.tool_name, "arguments": part.args_as_dict(),
             **outcomes.get(part.tool_call_id, {})}
            for message in messages if isinstance(message, ModelResponse)
            for part in message.parts if isinstance(part, ToolCallPart)]


def run_conversation(turns: Sequence[Turn], conversation: str, database: Path,
                     provider: TracerProvider | None) -> list[TurnRecord]:
    """Play the conversation turn by turn (one agent run each, history carried over)."""
    model, unplayed = scripted_model(turns)
    agent = build_agent(model, provider)
    shop = Shop(database, conversation)

    async def play() -> list[TurnRecord]:
        history: list[ModelMessage] | None = None
        records = []
        for turn in turns:
            result = await agent.run(turn.user, deps=shop, message_history=history,
                                     conversation_id=conversation)
            records.append(TurnRecord(turn.user, result.output, _calls(result.new_messages())))
            history = result.all_messages()
        return records

    records = asyncio.run(play())
    if unplayed:
        raise RuntimeError(f"{conversation}: {len(unplayed)} scripted steps were never played")
    return records
