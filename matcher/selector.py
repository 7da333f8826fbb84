"""Which conversations an expectation applies to."""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from .types import InvalidExpectation, key_path
from .values import check_json, json_equal

FIELDS = ("conversation", "service", "agent", "attributes")


@lru_cache(maxsize=4096)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """A shell-style glob (`*`, `?`, `[…]`) on the whole name, case-sensitive."""
    return re.compile(fnmatch.translate(pattern))


def glob_match(pattern: str, name: str) -> bool:
    """True when the glob matches the whole name."""
    return compile_glob(pattern).match(name) is not None


def _scalar_text(v: Any) -> str | None:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() else repr(v)
    if isinstance(v, str):
        return v
    return None


def _attr_equal(actual: Any, expected: Any) -> bool:
    if json_equal(actual, expected):
        return True
    a, e = _scalar_text(actual), _scalar_text(expected)
    return a is not None and a == e


@dataclass(frozen=True)
class Selector:
    """All given fields must hold: a conversation-key glob, the service, an agent
    name seen anywhere in the conversation, and resource/span attribute values."""

    conversation: str | None = None
    service: str | None = None
    agent: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)

    def matches(
        self,
        *,
        conversation: str,
        service: str | None,
        agents: Collection[str],
        attributes: Mapping[str, Any],
    ) -> bool:
        """True when every given field holds for this conversation."""
        if self.conversation is not None and not glob_match(self.conversation, conversation):
            return False
        if self.service is not None and service != self.service:
            return False
        if self.agent is not None and self.agent not in agents:
            return False
        for key, expected in self.attributes.items():
            if key not in attributes or not _attr_equal(attributes[key], expected):
                return False
        return True

    @property
    def every(self) -> bool:
        """True when no field is given: the selector picks every conversation."""
        return not self.to_dict()

    def describe(self) -> str:
        """In words, which conversations the selector picks."""
        parts = []
        if self.conversation is not None:
            parts.append(f"the key matches {self.conversation!r}")
        if self.service is not None:
            parts.append(f"the service is {self.service!r}")
        if self.agent is not None:
            parts.append(f"agent {self.agent!r} took part")
        parts += [f"attribute {k!r} is {json.dumps(v)}" for k, v in self.attributes.items()]
        if not parts:
            return "every conversation (no selector)"
        return "conversations where " + " and ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """The normalised JSON form (only the given fields)."""
        out: dict[str, Any] = {}
        for name in ("conversation", "service", "agent"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.attributes:
            out["attributes"] = dict(self.attributes)
        return out


def parse_selector(raw: Any, path: str = "selector") -> Selector:
    """Validate and build a selector from its JSON form."""
    if raw is None:
        return Selector()
    if not isinstance(raw, Mapping):
        raise InvalidExpectation(path, "must be an object")
    for key in raw:
        if key not in FIELDS:
            raise InvalidExpectation(
                key_path(path, str(key)), f"unknown field (expected one of {', '.join(FIELDS)})"
            )
    values: dict[str, str | None] = {}
    for name in ("conversation", "service", "agent"):
        value = raw.get(name)
        if value is not None and (not isinstance(value, str) or not value):
            raise InvalidExpectation(key_path(path, name), "must be a non-empty string")
        values[name] = value
    attrs = raw.get("attributes")
    if attrs is None:
        attrs = {}
    if not isinstance(attrs, Mapping):
        raise InvalidExpectation(key_path(path, "attributes"), "must be an object")
    check_json(attrs, key_path(path, "attributes"))
    return Selector(
        conversation=values["conversation"],
        service=values["service"],
        agent=values["agent"],
        attributes=dict(attrs),
    )
