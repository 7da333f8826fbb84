"""Redaction at ingest: rules applied to every tool call before anything is stored.

`store.rows.prepare` applies a `Policy` to each batch; every way in (OTLP spans, explicit
calls, A2A tasks, ADK events) passes through it, in the ingest worker processes or inline, so
there is one place redaction happens. A policy is plain data and pickles to those processes.

- Key rules: argument and result keys (at any depth) matched by glob, for tools matched by
  glob, are dropped, masked (`MASK`) or hashed (`hash_value`: HMAC-SHA256 with the configured
  secret, so equal values stay equal and an expectation can name the hashed value).
- Patterns: regular expressions over every string value (arguments, results, raw arguments,
  error messages, kept span attributes, conversation attributes, refusal reasons) are masked.
- Span attributes kept beside a call: `all`, `none`, or an allowlist of globs; the attributes
  extraction read the arguments and result from are never kept (they would store them twice).

docs/redaction.md describes the rules file and how to write expectations over hashed values.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import operator
import re
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Literal

import orjson
import re2
import yaml

from tooltrail.collector.extract.conventions import EXTRACTED_KEYS, beside
from tooltrail.collector.model import Batch, RejectedSpan, ToolCall, TraceInfo

Action = Literal["drop", "mask", "hash"]
ACTIONS = ("drop", "mask", "hash")
MASK = "[redacted]"
HASH_PREFIX = "hmac-sha256:"
MAX_CACHED = 10_000  # cached names (tools, keys), hashes and masked texts per policy
MEMO_CHARS = 256  # strings up to this long are remembered masked (`Policy.text`)
HASH_HEX = 32  # hex digits kept of the 64 (128 bits: collisions are not a concern)

EMAIL = r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
CARD = r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])"  # 13–19 digits; Luhn-checked below


CARD_RUN = b"0" * 13
# runs of digits, spaces and hyphens holding 13 digits or more (linear time: it scans whole
# JSON texts)
CARD_CANDIDATES = re2.compile(rb"\d(?:[ -]*\d){12}[\d -]*")
DIGIT_MAP = bytes(ord("0") if chr(i).isdigit() and i < 128 else ord("x") for i in range(256))


class RedactionError(ValueError):
    """Redaction settings that cannot be used; the message is one line, for the user."""


def hash_value(secret: bytes, value: Any) -> str:
    """The keyed hash a `hash` rule stores in place of `value`.

    A string is hashed as its UTF-8 text; any other JSON value as its canonical JSON (sorted
    keys, no spaces, non-ASCII kept): HMAC-SHA256(secret, bytes), the first HASH_HEX hex
    digits, prefixed by HASH_PREFIX. `tooltrail redact-hash VALUE` prints it."""
    text = value if isinstance(value, str) else json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    digest = hmac.new(secret, text.encode("utf-8", "replace"), hashlib.sha256).hexdigest()
    return HASH_PREFIX + digest[:HASH_HEX]


def luhn(digits: str) -> bool:
    """True when the digits (separators ignored) pass the Luhn check card numbers carry."""
    numbers = [int(c) for c in digits if c.isdigit()]
    total = 0
    for i, n in enumerate(reversed(numbers)):
        if i % 2:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


@dataclass(frozen=True, slots=True)
class KeyRule:
    """Keys matching `key` (glob) in the arguments and/or result of tools matching `tool`."""

    key: str
    action: Action
    tool: str = "*"
    arguments: bool = True
    result: bool = True


@dataclass(frozen=True, slots=True)
class Pattern:
    """A regular expression whose matches in string values are replaced by `[redacted:NAME]`;
    `luhn` keeps only matches that pass the Luhn check (card numbers, not any long number)."""

    name: str
    regex: re.Pattern[str]
    luhn: bool = False
    prefilter: str = ""  # built-ins: how a text is ruled out at once (`may_match`, `may_hold`)

    def may_hold(self, text: str) -> bool:
        """False only when `text` holds no match (a substring test or one `translate`, far
        cheaper than the regex; True for custom patterns)."""
        if self.prefilter == "@":
            return "@" in text
        if self.prefilter == "digits":
            return CARD_RUN in text.encode("utf-8", "replace").translate(DIGIT_MAP, b" -")
        return True

    def may_match(self, blob: bytes) -> bool:
        """False only when no string inside the JSON document `blob` holds a match: exact for
        the built-in patterns (JSON escapes none of their characters), True for custom ones."""
        if self.prefilter == "@":
            return b"@" in blob
        if self.prefilter == "digits":
            # digits → 0, separators removed, anything else → x: a card is a run of 13 zeros
            if CARD_RUN not in blob.translate(DIGIT_MAP, b" -"):
                return False
            # every match lies inside one run of digits, spaces and hyphens: look at those
            # runs (with a character either side, for the pattern's lookarounds) only
            for run in CARD_CANDIDATES.finditer(blob):
                start, end = run.span()
                window = blob[max(0, start - 1):end + 1].decode("utf-8", "replace")
                if self.sub(window) != window:
                    return True
            return False
        return True

    def sub(self, text: str) -> str:
        marker = f"[redacted:{self.name}]"
        if not self.luhn:
            return self.regex.sub(marker, text)
        return self.regex.sub(lambda m: marker if luhn(m.group()) else m.group(), text)


BUILTIN_PATTERNS = {
    "email": Pattern("email", re.compile(EMAIL), prefilter="@"),
    "card": Pattern("card", re.compile(CARD, re.ASCII), luhn=True, prefilter="digits"),
}


# a mapping's plan: the rule of each of its keys that has one, and its other keys whose value
# is a mapping or a list (where rules may apply deeper)
Plan = tuple[dict[str, KeyRule], tuple[str, ...]]
NO_RULES: dict[str, KeyRule] = {}


@dataclass(frozen=True, slots=True)
class KeyMatcher:
    """The key rules of one tool's arguments or result, with each key's rule found once and
    each mapping shape's plan found once."""

    rules: tuple[KeyRule, ...]
    seen: dict[str, KeyRule | None] = field(default_factory=dict)
    plans: dict[tuple[Any, ...], Plan] = field(default_factory=dict)

    def rule(self, key: str) -> KeyRule | None:
        """The first rule whose glob matches `key`, or None."""
        try:
            return self.seen[key]
        except KeyError:
            pass
        found = next((r for r in self.rules if fnmatchcase(key, r.key)), None)
        if len(self.seen) < MAX_CACHED:
            self.seen[key] = found
        return found

    def plan(self, mapping: dict[str, Any]) -> Plan:
        """What the rules do to `mapping`, by its shape (its keys and their values' types): a
        tool's arguments and results have the same few shapes call after call, so a mapping
        no rule can change deciding that costs a tuple and a lookup, without a JSON text."""
        shape = (*mapping, *map(type, mapping.values()))  # keys are str: never a type
        try:
            return self.plans[shape]
        except KeyError:
            pass
        rules = {k: r for k in mapping if (r := self.rule(k)) is not None}
        nested = tuple(k for k, v in mapping.items()
                       if k not in rules and isinstance(v, (dict, list)))
        found = (rules, nested) if rules or nested else (NO_RULES, ())
        if len(self.plans) < MAX_CACHED:
            self.plans[shape] = found
        return found


@dataclass(frozen=True, slots=True)
class Policy:
    """What is removed from a batch before it is stored. The default removes nothing but the
    span attributes extraction read the arguments and result from."""

    keys: tuple[KeyRule, ...] = ()
    patterns: tuple[Pattern, ...] = ()
    secret: bytes = b""
    attributes: Literal["all", "none"] | tuple[str, ...] = "all"  # a tuple: allowed globs
    # (tool, arguments | result) → its key rules, found once: tool names are few
    _matchers: dict[tuple[str, str], KeyMatcher | None] = field(default_factory=dict,
                                                                compare=False)
    _hashes: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    # short strings (ids, names, resource attributes) recur in every trace: masked once
    _texts: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def redacts(self) -> bool:
        """True when values (not only attribute keys) may change."""
        return bool(self.keys or self.patterns)

    def apply(self, batch: Batch) -> Batch:
        """The batch with every call, trace and refusal redacted."""
        if not self.redacts:
            # a call whose kept attributes are its own (the same dict) is kept as is: copying
            # a call costs more than reading it
            calls = tuple(c if (kept := self.kept_attributes(c.attributes)) is c.attributes
                          else c.evolve(attributes=kept) for c in batch.calls)
            if all(map(operator.is_, calls, batch.calls)):
                return batch
            return replace(batch, calls=calls)
        return replace(
            batch,
            calls=tuple(self.call(c) for c in batch.calls),
            traces=tuple(self.trace(t) for t in batch.traces),
            rejected=tuple(self.refusal(r) for r in batch.rejected),
            unextracted=tuple(self.refusal(r) for r in batch.unextracted),
        )

    def call(self, call: ToolCall) -> ToolCall:
        attributes = self.kept_attributes(call.attributes)
        raw, error = call.arguments_raw, call.error
        keys = self.matcher(call.name, "arguments")
        scan_arguments = scan_result = scan = False
        # usually no pattern matches anywhere: one JSON text of the whole call rules that out
        if self.patterns and self.patterns_may_match(
                _json((call.arguments, call.result, attributes, error, raw))):
            scan_arguments = self.patterns_may_match(_json(call.arguments))
            scan_result = self.patterns_may_match(_json(call.result))
            scan = self.patterns_may_match(_json((attributes, error, raw)))
        arguments = self.value(call.arguments, keys, scan_arguments)
        result = self.value(call.result, self.matcher(call.name, "result"), scan_result)
        if raw is not None:
            # the raw text holds every argument as sent: keyed rules cannot reach into it
            raw = None if keys is not None else self.text(raw) if scan else raw
        if scan:
            attributes = self.value(attributes, None, True)
            error = None if error is None else self.text(error)
        if (arguments is call.arguments and result is call.result and raw is call.arguments_raw
                and error is call.error and attributes is call.attributes):
            return call
        return call.evolve(arguments=arguments, arguments_raw=raw, result=result, error=error,
                           attributes=attributes)

    def trace(self, trace: TraceInfo) -> TraceInfo:
        # usually ruled out at once by one JSON text of all; else masked string by string
        # (most recur, and are answered by `text`'s memo)
        if not trace.attributes or not self.patterns_may_match(_json(trace.attributes)):
            return trace
        attributes = self.value(trace.attributes, None, True)
        return trace if attributes is trace.attributes else replace(trace, attributes=attributes)

    def patterns_may_match(self, blob: bytes | None) -> bool:
        """False when no pattern can match a string inside the JSON document `blob` (one pass
        over it per pattern: far cheaper than a regex over each string)."""
        if blob is None:
            return bool(self.patterns)
        for pattern in self.patterns:  # noqa: SIM110 (no generator: this runs for every call)
            if pattern.may_match(blob):
                return True
        return False

    def refusal(self, span: RejectedSpan) -> RejectedSpan:
        return replace(span, reason=self.text(span.reason), name=self.text(span.name))

    def matcher(self, tool: str, where: str) -> KeyMatcher | None:
        """The key rules for `tool`'s arguments or result; None when none applies."""
        if not self.keys:
            return None
        cache_key = (tool, where)
        try:
            return self._matchers[cache_key]
        except KeyError:
            pass
        rules = tuple(r for r in self.keys if getattr(r, where) and fnmatchcase(tool, r.tool))
        found = KeyMatcher(rules) if rules else None
        if len(self._matchers) < MAX_CACHED:  # bounded whatever names arrive
            self._matchers[cache_key] = found
        return found

    def kept_attributes(self, attributes: dict[str, Any]) -> dict[str, Any]:
        if self.attributes == "none":
            return attributes if not attributes else {}
        if self.attributes == "all":
            return beside(attributes)
        allowed = self.attributes
        return {k: v for k, v in attributes.items()
                if k not in EXTRACTED_KEYS and any(fnmatchcase(k, g) for g in allowed)}

    def value(self, value: Any, keys: KeyMatcher | None, scan: bool = True) -> Any:
        """`value` with key rules applied to its mappings (at any depth) and, when `scan`,
        patterns to its strings. What nothing changes is returned as is (the same object)."""
        if isinstance(value, str):
            return self.text(value) if scan else value
        if keys is None and not scan:
            return value
        if isinstance(value, dict):
            rules, nested = keys.plan(value) if keys is not None else (NO_RULES, ())
            out: dict[str, Any] | None = None  # a copy, once something changes
            for key, rule in rules.items():
                out = dict(value) if out is None else out
                if rule.action == "drop":
                    del out[key]
                else:
                    out[key] = MASK if rule.action == "mask" else self.hashed(value[key])
            for key in value if scan else nested:
                if key in rules:
                    continue
                item = value[key]
                new = self.value(item, keys, scan)
                if new is not item:
                    out = dict(value) if out is None else out
                    out[key] = new
            return value if out is None else out
        if isinstance(value, list):
            copied: list[Any] | None = None  # a copy, once something changes
            for i, item in enumerate(value):
                new = self.value(item, keys, scan)
                if new is not item:
                    copied = list(value) if copied is None else copied
                    copied[i] = new
            return value if copied is None else copied
        return value

    def hashed(self, value: Any) -> str:
        """hash_value with this policy's secret; strings' hashes are cached (ids recur)."""
        if not isinstance(value, str):
            return hash_value(self.secret, value)
        found = self._hashes.get(value)
        if found is None:
            found = hash_value(self.secret, value)
            if len(self._hashes) >= MAX_CACHED:
                self._hashes.clear()
            self._hashes[value] = found
        return found

    def text(self, text: str) -> str:
        """`text` with every pattern's matches masked (the same object when none matched)."""
        short = len(text) <= MEMO_CHARS
        if short:
            found = self._texts.get(text)
            if found is not None:
                return found
        out = text
        for pattern in self.patterns:
            if pattern.may_hold(out):
                out = pattern.sub(out)
        out = text if out == text else out
        if short:
            if len(self._texts) >= MAX_CACHED:
                self._texts.clear()
            self._texts[text] = out
        return out


def _json(value: Any) -> bytes | None:
    """`value` as JSON text, or None when orjson cannot write it (then everything is walked)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        return None


def load_policy(rules_file: str | None, secret: str | None, span_attributes: str) -> Policy:
    """The policy of the settings; raises RedactionError naming what is wrong."""
    attributes = parse_span_attributes(span_attributes)
    if rules_file is None:
        return Policy(attributes=attributes)
    path = Path(rules_file)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise RedactionError(f"redaction rules {path}: {' '.join(str(exc).split())}") from None
    try:
        keys, patterns = parse_rules(data)
    except (ValueError, TypeError, re.error) as exc:
        raise RedactionError(f"redaction rules {path}: {exc}") from None
    if any(r.action == "hash" for r in keys) and not secret:
        raise RedactionError(
            f"redaction rules {path}: `hash` rules need a secret (TOOLTRAIL_REDACTION_SECRET)")
    return Policy(keys=keys, patterns=patterns, secret=(secret or "").encode(),
                  attributes=attributes)


def parse_span_attributes(value: str) -> Literal["all", "none"] | tuple[str, ...]:
    """`all`, `none`, or comma-separated globs of the span attribute keys to keep."""
    text = value.strip()
    if text in ("all", "none"):
        return "all" if text == "all" else "none"
    globs = tuple(part.strip() for part in text.split(",") if part.strip())
    if not globs:
        raise RedactionError("span_attributes: `all`, `none` or comma-separated key globs")
    return globs


def parse_rules(data: Any) -> tuple[tuple[KeyRule, ...], tuple[Pattern, ...]]:
    """`{keys: [{key, action, tool?, in?}], patterns: [NAME | {name, regex}]}`."""
    if not isinstance(data, dict) or set(data) - {"keys", "patterns"}:
        raise ValueError("expected a mapping with `keys` and/or `patterns`")
    keys = tuple(_key_rule(i, r) for i, r in enumerate(_list(data, "keys")))
    patterns = tuple(_pattern(i, p) for i, p in enumerate(_list(data, "patterns")))
    return keys, patterns


def _list(data: dict[str, Any], name: str) -> list[Any]:
    value = data.get(name) or []
    if not isinstance(value, list):
        raise ValueError(f"`{name}` must be a list")
    return value


def _key_rule(i: int, rule: Any) -> KeyRule:
    where = f"keys[{i}]"
    if not isinstance(rule, dict) or set(rule) - {"key", "action", "tool", "in"}:
        raise ValueError(f"{where}: expected {{key, action, tool?, in?}}")
    key, action, tool = rule.get("key"), rule.get("action"), rule.get("tool", "*")
    if not isinstance(key, str) or not key or not isinstance(tool, str) or not tool:
        raise ValueError(f"{where}: `key` and `tool` are non-empty globs")
    if action not in ACTIONS:
        raise ValueError(f"{where}: `action` is one of {', '.join(ACTIONS)}")
    scope = rule.get("in", "both")
    if scope not in ("arguments", "result", "both"):
        raise ValueError(f"{where}: `in` is arguments, result or both")
    return KeyRule(key, action, tool, scope != "result", scope != "arguments")


def _pattern(i: int, item: Any) -> Pattern:
    if isinstance(item, str):
        if item not in BUILTIN_PATTERNS:
            raise ValueError(f"patterns[{i}]: no built-in pattern {item!r} "
                             f"({', '.join(BUILTIN_PATTERNS)}; or {{name, regex}})")
        return BUILTIN_PATTERNS[item]
    if not isinstance(item, dict) or set(item) != {"name", "regex"}:
        raise ValueError(f"patterns[{i}]: a built-in name or {{name, regex}}")
    name, regex = item["name"], item["regex"]
    if not isinstance(name, str) or not isinstance(regex, str) or not regex:
        raise ValueError(f"patterns[{i}]: `name` and `regex` are strings")
    return Pattern(name, re.compile(regex))

