"""The JSON Schema of an expectation (MATCHING.md), for OpenAPI. The matcher's parser is the
authority: it also checks what a schema cannot (operators, globs vs calls, budgets)."""

from __future__ import annotations

from typing import Any

MODES = [
    "strict",
    "in_order",
    "unordered",
    "superset",
    "subset",
    "exact",
    "any_order",
    "contains",
    "within",
]
ARGUMENT_MODES = ["ignore", "partial", "exact"]
NAMES = {"type": "array", "items": {"type": "string"}}

CALL: dict[str, Any] = {
    "type": "object",
    "required": ["name"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "arguments": {"type": "object", "description": "literals or {$operator: …} specs"},
        "arguments_match": {"type": "string", "enum": ARGUMENT_MODES},
        "weight": {"type": "number", "exclusiveMinimum": 0},
        "error": {"type": "boolean"},
        "result": {"description": "a value spec applied to the tool's result"},
    },
}

TURN: dict[str, Any] = {
    "type": "object",
    "required": ["calls"],
    "additionalProperties": False,
    "properties": {
        "match": {"type": "string", "enum": MODES},
        "arguments": {"type": "string", "enum": ARGUMENT_MODES},
        "calls": {"type": "array", "items": CALL},
    },
}

SELECTOR: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "conversation": {"type": "string", "description": "glob on the conversation key"},
        "service": {"type": "string"},
        "agent": {"type": "string"},
        "attributes": {"type": "object"},
    },
}


def expectation_schema(require_id: bool) -> dict[str, Any]:
    """The schema of an expectation body (`id` required where it is stored)."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["id"] if require_id else [],
        "properties": {
            "id": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"},
            "description": {"type": "string"},
            "suite": {"type": "string", "description": "the suite that registered it "
                      "(`tooltrail apply`; `--prune` deactivates its missing ones)"},
            "selector": SELECTOR,
            "scope": {"type": "string", "enum": ["conversation", "turn", "each_turn"]},
            "turn": {"type": "integer"},
            "match": {"type": "string", "enum": MODES},
            "arguments": {"type": "string", "enum": ARGUMENT_MODES},
            "calls": {"type": "array", "items": CALL},
            "turns": {"type": "array", "items": TURN},
            "allow_extra_turns": {"type": "boolean"},
            "forbid": NAMES,
            "allow": NAMES,
            "max_calls": {"type": "integer", "minimum": 0},
            "min_calls": {"type": "integer", "minimum": 0},
            "require_no_errors": {"type": "boolean"},
        },
    }


def request_body(require_id: bool) -> dict[str, Any]:
    """`openapi_extra` documenting an expectation request body."""
    return {
        "requestBody": {
            "required": True,
            "content": {media: {"schema": expectation_schema(require_id)}
                        for media in ("application/json", "application/yaml")},
        }
    }
