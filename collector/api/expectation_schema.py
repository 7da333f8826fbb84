"""The JSON Schema of an expectation (docs/matching.md), for OpenAPI, built from the parser's own
names (`matcher.spec`): its modes, aliases, scopes and id pattern (its field lists are held
to the properties here by tests/collector/api/test_expectation_schema.py).

It accepts every expectation the parser accepts — enum values case-insensitive with `-`, `_`
and space alike (`enum_key`), aliases, `null` where the parser reads "not given" — and
rejects what the parser rejects wherever a schema can say it. The parser stays the authority
on what a schema cannot say: value-spec operators, call names against `forbid`/`allow`,
`min_calls` against `max_calls`, budgets against the calls. The test holds schema and parser
to that on the matcher's test corpus.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from typing import Any

from tooltrail.matcher.spec import ARGUMENT_MODES, ID_PATTERN, MODE_ALIASES, MODES, SCOPES

NOT_NULL = {"not": {"type": "null"}}


@cache
def _folds_to(char: str) -> str:
    """A regex class of every character `enum_key` turns into `char`."""
    same = {chr(c) for c in range(0x10000) if chr(c).lower() == char}
    if char == "_":
        same |= {"-", " "}
    return "[" + "".join(_escape(c) for c in sorted(same)) + "]"


def _escape(char: str) -> str:
    return char if char.isascii() and char.isalnum() else f"\\u{ord(char):04x}"


@cache
def _space() -> str:
    """A regex class of the whitespace `str.strip` removes."""
    return "[" + "".join(_escape(chr(c)) for c in range(0x3001) if chr(c).isspace()) + "]"


def enum(values: Iterable[str], *, nullable: bool = False) -> dict[str, Any]:
    """A string the parser's `_enum` accepts as one of `values`."""
    names = list(values)
    alternatives = "|".join("".join(_folds_to(c) for c in name) for name in names)
    space = _space()
    return {
        "type": ["string", "null"] if nullable else "string",
        "pattern": f"^{space}*(?:{alternatives}){space}*$",
        "examples": names,
        "description": f"one of {', '.join(names)} (case-insensitive; `-`, `_` and space "
        "alike)",
    }


def _optional(type_: str | list[str], **more: Any) -> dict[str, Any]:
    """A field the parser reads as not given when it is null."""
    types = [type_] if isinstance(type_, str) else list(type_)
    return {"type": [*types, "null"], **more}


MODE = [*MODES, *MODE_ALIASES]
NAMES = _optional("array", items={"type": "string", "minLength": 1},
                  description="tool-name globs")  # fmt: skip

CALL: dict[str, Any] = {
    "type": "object",
    "required": ["name"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "arguments": _optional("object", description="literals or {$operator: …} specs"),
        "arguments_match": enum(ARGUMENT_MODES),
        "weight": {"type": "number", "exclusiveMinimum": 0},
        "error": {"description": "true/false, or a value spec applied to the error text"},
        "result": {"description": "a value spec applied to the tool's result"},
    },
}  # fmt: skip

TURN: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "match": enum(MODE, nullable=True),
        "arguments": enum(ARGUMENT_MODES, nullable=True),
        "calls": {"type": "array", "items": CALL},
    },
}  # fmt: skip

SELECTOR: dict[str, Any] = {
    "type": ["object", "null"],
    "additionalProperties": False,
    "description": "all given fields must hold; none given: every conversation",
    "properties": {
        "conversation": _optional("string", minLength=1,
                                  description="glob on the conversation key"),
        "service": _optional("string", minLength=1),
        "agent": _optional("string", minLength=1),
        "attributes": _optional("object"),
    },
}  # fmt: skip


def _given(name: str) -> dict[str, Any]:
    """The field is present and not null."""
    return {"required": [name], "properties": {name: NOT_NULL}}


# What the parser requires of fields together, where a schema can say it.
RULES: list[dict[str, Any]] = [
    {  # `turn` is required with scope turn, and only allowed with it
        "if": {"required": ["scope"], "properties": {"scope": enum(["turn"])}},
        "then": {"required": ["turn"], "properties": {"turn": {"type": "integer"}}},
        "else": {"properties": {"turn": {"type": "null"}}},
    },
    {"not": {"allOf": [_given("calls"), _given("turns")]}},  # calls or turns, not both
    {"if": _given("turns"), "then": {"properties": {"scope": enum(["conversation"])}}},
    {"if": _given("allow_extra_turns"), "then": _given("turns")},
]


def expectation_schema(require_id: bool) -> dict[str, Any]:
    """The schema of an expectation body (`id` required where it is stored)."""
    ident = {"type": "string", "pattern": f"^{ID_PATTERN}$"}
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["id"] if require_id else [],
        "properties": {
            "id": ident if require_id else {**ident, "type": ["string", "null"]},
            "description": _optional("string"),
            "suite": _optional("string", pattern=f"^{ID_PATTERN}$",
                               description="the suite that registered it (`tooltrail apply`; "
                               "`--prune` deactivates its missing ones)"),
            "selector": SELECTOR,
            "scope": enum(SCOPES),
            "turn": _optional("integer"),
            "match": enum(MODE),
            "arguments": enum(ARGUMENT_MODES),
            "calls": _optional("array", items=CALL),
            "turns": _optional("array", items=TURN),
            "allow_extra_turns": _optional("boolean"),
            "forbid": NAMES,
            "allow": NAMES,
            "max_calls": _optional("integer", minimum=0),
            "min_calls": _optional("integer", minimum=0),
            "require_no_errors": _optional("boolean"),
        },
        "allOf": RULES,
    }  # fmt: skip


def request_body(require_id: bool) -> dict[str, Any]:
    """`openapi_extra` documenting an expectation request body."""
    return {
        "requestBody": {
            "required": True,
            "content": {media: {"schema": expectation_schema(require_id)}
                        for media in ("application/json", "application/yaml")},
        }
    }
