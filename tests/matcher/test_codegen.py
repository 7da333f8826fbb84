"""Compiled spec tests (`matcher.codegen`): the same verdicts as the specs' own
explanations, keys that are not identifiers, and one factory per shape."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from matcher import codegen
from matcher.values import MISSING, compile_spec

SPEC_KEYS = ["a", "b", "it's", 'q"uote', "new\nline", "back\\slash", "é", "{v}"]
KEYS = [*SPEC_KEYS, "$x"]
scalars = st.one_of(
    st.integers(-2, 2),
    st.sampled_from([0.0, 1.0, 1.5, -0.0]),
    st.booleans(),
    st.sampled_from(["", "p", "q", "1"]),
    st.none(),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.tuples(inner, inner),
        st.dictionaries(st.sampled_from(KEYS), inner, max_size=3),
    ),
    max_leaves=8,
)
operators = st.one_of(
    st.builds(lambda v: {"$in": [v, 1]}, scalars),
    st.builds(lambda n: {"$gte": n}, st.integers(-1, 1)),
    st.just({"$regex": "[pq]"}),
    st.just({"$any": True}),
    st.just({"$type": "string"}),
    st.builds(lambda v: {"$literal": v}, values),
    st.builds(lambda v: {"$contains": v}, scalars),
)
specs = st.recursive(
    st.one_of(scalars, operators),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(SPEC_KEYS), st.one_of(inner, st.just({"$absent": True})), max_size=3
        ),
    ),
    max_leaves=8,
)


@settings(max_examples=600, deadline=None)
@given(specs, values, st.booleans(), st.sampled_from([codegen.MAX_LINES, 3, 0]))
def test_compiled_verdict_is_the_explanations_verdict(
    raw: Any, value: Any, exact: bool, max_lines: int
) -> None:
    """`matches` (compiled, or walking specs too large to compile) and `mismatch`
    (tree-walking, written apart) agree."""
    saved = codegen.MAX_LINES
    codegen.MAX_LINES = max_lines
    try:
        spec = compile_spec({"arg": raw}, "arguments", exact)
    finally:
        codegen.MAX_LINES = saved
    for v in ({"arg": value}, value, {}):
        assert spec.matches(v) is (spec.mismatch(v) is None), (raw, v)


def test_large_specs_are_walked_not_compiled() -> None:
    codegen._FACTORIES.clear()
    body = {f"k{i}": i for i in range(200)}
    spec = compile_spec(body, "arguments", True)
    assert not codegen._FACTORIES  # 200 keys: over MAX_LINES, nothing compiled
    assert spec.matches(dict(body))
    assert not spec.matches({**body, "k199": 0})
    assert not spec.matches({**body, "extra": 1})
    small = compile_spec({"nested": [body], "id": 1}, "arguments", False)
    assert small.matches({"nested": [body], "id": 1.0})
    assert not small.matches({"nested": [{**body, "k0": "0"}], "id": 1})


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(KEYS), values, max_size=4), st.booleans())
def test_a_value_matches_itself_as_a_spec(value: dict[str, Any], exact: bool) -> None:
    # Keys with quotes, backslashes and newlines reach the source only as literals.
    if any(k.startswith("$") for k in value):
        value = {f"k{k}": v for k, v in value.items()}
    spec = compile_spec(_literal_keys(value), "arguments", exact)
    assert spec.matches(value) is True
    if value:
        changed = dict(value)
        changed.pop(next(iter(value)))
        assert spec.matches(changed) is False


def _literal_keys(value: Any) -> Any:
    """`value` as a spec that matches it: nested `$`-keyed objects written `$literal`."""
    if isinstance(value, dict):
        if any(k.startswith("$") for k in value):
            return {"$literal": value}
        return {k: _literal_keys(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_literal_keys(v) for v in value]
    return value


def test_types_keep_json_semantics() -> None:
    spec = compile_spec({"n": 1, "b": True, "s": "1", "z": None}, "arguments", False)
    assert spec.matches({"n": 1.0, "b": True, "s": "1", "z": None})
    assert not spec.matches({"n": True, "b": True, "s": "1", "z": None})  # true is not 1
    assert not spec.matches({"n": 1, "b": 1, "s": "1", "z": None})  # 1 is not true
    assert not spec.matches({"n": 1, "b": True, "s": 1, "z": None})
    assert not spec.matches({"n": 1, "b": True, "s": "1", "z": MISSING})
    assert not spec.matches({"n": 1, "b": True, "s": "1"})  # a null key must be present
    assert not spec.matches([("n", 1)])


def test_specs_of_one_shape_share_a_compiled_factory() -> None:
    codegen._FACTORIES.clear()
    a = compile_spec({"order_id": 1, "note": {"$regex": "x+"}}, "arguments", False)
    b = compile_spec({"order_id": 2, "note": {"$regex": "y+"}}, "arguments", False)
    assert len(codegen._FACTORIES) == 1
    assert a.matches({"order_id": 1, "note": "xx"}) and not a.matches({"order_id": 2, "note": "xx"})
    assert b.matches({"order_id": 2, "note": "yy"}) and not b.matches({"order_id": 2, "note": "xx"})
    compile_spec({"other": 1}, "arguments", False)
    assert len(codegen._FACTORIES) == 2


def test_keys_never_reach_the_source() -> None:
    """Keys are passed in like values: a `str` subclass (an enum member) works as its
    plain text does, a `__repr__` of its own runs nothing, and a huge key stays out of
    the cached sources."""
    import enum

    class K(enum.StrEnum):
        A = "a"

    spec = compile_spec({K.A: 1, "b": {K.A: True}}, "arguments", False)
    assert spec.matches({"a": 1, "b": {"a": True}})
    assert not spec.matches({"a": 2, "b": {"a": True}})

    ran: list[str] = []

    class Sneaky(str):
        def __repr__(self) -> str:
            ran.append("repr")
            return "__import__('os').getpid() or 'a'"

    sneaky = compile_spec({Sneaky("a"): 1, "z": {"$absent": True}}, "arguments", True)
    assert sneaky.matches({"a": 1}) and not sneaky.matches({"a": 1, "z": 0})
    assert ran == []

    codegen._FACTORIES.clear()
    huge = "k" * 1_000_000
    big = compile_spec({huge: 1, "n": {huge: "x"}}, "arguments", False)
    assert big.matches({huge: 1, "n": {huge: "x"}})
    assert codegen._FACTORIES and max(len(text) for text in codegen._FACTORIES) < 2_000
