"""Selectors: every given field must hold."""

from __future__ import annotations

from typing import Any

import pytest

from tooltrail.matcher import Selector, parse_expectation


def _sel(**fields: Any) -> Selector:
    return parse_expectation({"selector": fields}).selector


def _matches(sel: Selector, conversation: str = "refund-42", service: str | None = "support",
             agents: tuple[str, ...] = ("triage", "support"),
             attributes: dict[str, Any] | None = None) -> bool:  # fmt: skip
    return sel.matches(conversation=conversation, service=service, agents=agents,
                       attributes=attributes or {})  # fmt: skip


def test_empty_selector_matches_everything() -> None:
    assert _matches(Selector())
    assert _matches(_sel(), service=None, agents=())


@pytest.mark.parametrize(
    ("glob", "key", "ok"),
    [
        ("refund-*", "refund-42", True), ("refund-*", "Refund-42", False),
        ("refund-?", "refund-4", True), ("refund-?", "refund-42", False),
        ("refund-[0-9]*", "refund-42", True), ("refund-[!0-9]*", "refund-42", False),
        ("refund", "refund-42", False), ("*", "", True), ("a/b*", "a/b/c", True),
    ],
)  # fmt: skip
def test_conversation_glob(glob: str, key: str, ok: bool) -> None:
    assert _matches(_sel(conversation=glob), conversation=key) is ok


def test_service_and_agent() -> None:
    assert _matches(_sel(service="support"))
    assert not _matches(_sel(service="support"), service="billing")
    assert not _matches(_sel(service="support"), service=None)
    assert _matches(_sel(agent="triage"))
    assert not _matches(_sel(agent="billing"))


def test_attributes() -> None:
    sel = _sel(attributes={"eval.case.id": "refund-late-order", "tier": 2})
    attrs = {"eval.case.id": "refund-late-order", "tier": 2, "other": True}
    assert _matches(sel, attributes=attrs)
    assert _matches(sel, attributes={**attrs, "tier": "2"})  # str() equality for scalars
    assert _matches(sel, attributes={**attrs, "tier": 2.0})
    assert not _matches(sel, attributes={**attrs, "tier": 3})
    assert not _matches(sel, attributes={"tier": 2})
    assert _matches(_sel(attributes={"flag": True}), attributes={"flag": "true"})
    assert not _matches(_sel(attributes={"flag": True}), attributes={"flag": 1})
    assert _matches(_sel(attributes={"l": [1, 2]}), attributes={"l": [1, 2]})


def test_all_fields_must_hold() -> None:
    sel = _sel(conversation="refund-*", service="support", agent="support",
               attributes={"env": "prod"})  # fmt: skip
    assert _matches(sel, attributes={"env": "prod"})
    assert not _matches(sel, attributes={"env": "dev"})
    assert not _matches(sel, conversation="chat-1", attributes={"env": "prod"})


def test_selector_round_trip() -> None:
    data = {"conversation": "a*", "service": "s", "agent": "x", "attributes": {"k": 1}}
    sel = _sel(**data)
    assert sel.to_dict() == data
    assert sel == Selector(conversation="a*", service="s", agent="x", attributes={"k": 1})
