"""A seeded random corpus of (expectation, trajectory) cases for differential runs.

Only the public API is used (`parse_expectation`, `Trajectory`, `Call`, `score`,
`Result.to_dict`), so the same corpus runs against any version of the matcher: the
differential test compares this tree's results with digests of the results of the
implementation it replaced, and

    python -m tests.matcher.corpus --cases 50000 --out results.jsonl

writes every case's results in full (one JSON line per case) for a byte-for-byte
comparison with another checkout (`PYTHONPATH=<checkout> python -m …`).

A case's results are its `Result.to_dict()` list as canonical JSON, or the message
of the `InvalidExpectation` it raises. The generator draws from one `random.Random`
per case (seed and index), so cases do not shift when the generator grows at the end.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from collections.abc import Iterator
from typing import Any

from tooltrail.matcher import Call, InvalidExpectation, Trajectory, parse_expectation, score

TOOLS = ("search", "lookup", "refund", "email", "read")
KEYS = ("id", "q", "n", "amount", "tags", "opts", "status", "x.y", "it's")
STRINGS = ("a", "A b", "order 12 status", "1", "", "late", "Late-Delivery", "bo", "boom")
SCALARS: tuple[Any, ...] = (0, 1, 2, -1, 1.0, 2.5, 0.1, 19.99, True, False, None, *STRINGS)
MODES = ("strict", "in_order", "unordered", "superset", "subset", "exact", "any_order")
ARGUMENT_MODES = ("partial", "exact", "ignore")
WEIGHTS = (1, 1, 1, 2, 0.5, 3, 1.5, 0.1, 0.25)


def _value(rng: random.Random, depth: int = 0) -> Any:
    r = rng.random()
    if depth > 1 or r < 0.7:
        return rng.choice(SCALARS)
    if r < 0.85:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(KEYS): _value(rng, depth + 1) for _ in range(rng.randrange(3))}


def _arguments(rng: random.Random, name: str, i: int) -> Any:
    r = rng.random()
    if r < 0.03:
        return rng.choice([["not", "a", "dict"], "text", 7])
    args: dict[str, Any] = {"id": f"req-{i % 7}"}
    if name == "search":
        args["q"] = f"order {rng.randrange(30)} status"
        args["n"] = rng.choice((5, 10, 10.0))
    elif name == "lookup":
        args["n"] = rng.randrange(5)
        args["opts"] = {"items": rng.choice((True, False)), "history": False}
    elif name == "refund":
        args["amount"] = rng.choice((19.99, 20.0, 5, 120.5, True))
        args["status"] = rng.choice(STRINGS)
    elif name == "email":
        args["status"] = rng.choice(("open", "shipped", "late", "Late-Delivery"))
        args["tags"] = rng.sample(["a", "b", "c", "d"], rng.randrange(4))
    for _ in range(rng.randrange(3)):
        args[rng.choice(KEYS)] = _value(rng)
    return args


def _call(rng: random.Random, i: int, tools: tuple[str, ...]) -> dict[str, Any]:
    name = rng.choice(tools)
    call: dict[str, Any] = {"name": name, "arguments": _arguments(rng, name, i)}
    r = rng.random()
    if r < 0.1:
        call["error"] = rng.choice((True, "boom: timeout", "", False))
    if rng.random() < 0.3:
        call["result"] = rng.choice(({"ok": True}, {"ok": False, "n": 2}, "done", [1, 2], None))
    return call


def _operator(rng: random.Random, actual: Any) -> Any:
    """A spec for one argument value: often one that `actual` meets."""
    k = rng.randrange(22)
    num = actual if isinstance(actual, (int, float)) and not isinstance(actual, bool) else 3
    text = actual if isinstance(actual, str) else "a"
    if k == 0:
        return {"$approx": num, "$tol": rng.choice((0.01, 0.5, 0))}
    if k == 1:
        return {"$approx": num, "$rel": 0.05}
    if k == 2:
        return {"$approx": num}
    if k == 3:
        return {"$regex": rng.choice((r"order \d+ status", "req-[0-3]", ".*", "[a-z]+", "A.*"))}
    if k == 4:
        return {"$in": [actual, "zz", 1] if rng.random() < 0.7 else ["zz", 0]}
    if k == 5:
        return {"$contains": rng.choice(("a", "b", "st", {"items": True}, 1))}
    if k == 6:
        return {rng.choice(("$gt", "$gte", "$lt", "$lte")): rng.choice((0, 1, 10, 19.99))}
    if k == 7:
        return {"$type": rng.choice(("string", "number", "integer", "boolean", "object",
                                     "array", "null"))}  # fmt: skip
    if k == 8:
        return {"$norm": text.upper().replace(" ", "_")}
    if k == 9:
        items = actual if isinstance(actual, list) else ["a", "b"]
        return {"$unordered": list(reversed(items))}
    if k == 10:
        return {"$not": rng.choice((actual, "zz", {"$type": "string"}))}
    if k == 11:
        return {"$all": [{"$type": "number"}, {"$gte": 0}]}
    if k == 12:
        return {"$any": True}
    if k == 13:
        return {"$literal": actual}
    if k == 14:
        return {"$gte": 0, "$lt": 100}
    if k == 15:
        return {"$absent": True}
    if k == 16 and isinstance(actual, dict):
        return {key: _operator(rng, v) for key, v in list(actual.items())[:2]}
    return actual if rng.random() < 0.85 else _value(rng)


def _expected_call(rng: random.Random, call: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": call["name"]}
    args = call["arguments"]
    r = rng.random()
    if isinstance(args, dict) and r < 0.85:
        keys = [k for k in args if rng.random() < 0.6]
        spec: dict[str, Any] = {}
        for k in keys:
            spec[k] = _operator(rng, args[k]) if rng.random() < 0.4 else args[k]
        if rng.random() < 0.15:
            spec[rng.choice(KEYS)] = rng.choice(({"$absent": True}, "zz", 0))
        if spec or rng.random() < 0.5:
            out["arguments"] = spec
    elif r < 0.9:
        out["arguments"] = {"id": "req-1"}
    if rng.random() < 0.12:
        out["arguments_match"] = rng.choice(ARGUMENT_MODES)
    if rng.random() < 0.2:
        out["weight"] = rng.choice(WEIGHTS)
    if rng.random() < 0.08:
        out["error"] = rng.choice((True, False, {"$regex": "boom.*"}, "boom: timeout"))
    if rng.random() < 0.06:
        out["result"] = rng.choice(({"ok": True}, {"$type": "object"}, "done"))
    return out


def _mutate(rng: random.Random, calls: list[dict[str, Any]], tools: tuple[str, ...]) -> None:
    for _ in range(rng.choice((0, 0, 1, 1, 2, 3))):
        if not calls:
            return
        k = rng.randrange(6)
        i = rng.randrange(len(calls))
        if k == 0:
            calls.pop(i)
        elif k == 1:
            j = rng.randrange(len(calls))
            calls[i], calls[j] = calls[j], calls[i]
        elif k == 2:
            calls.insert(i, json.loads(json.dumps(calls[i])))
        elif k == 3 and isinstance(calls[i].get("arguments"), dict) and calls[i]["arguments"]:
            key = rng.choice(list(calls[i]["arguments"]))
            calls[i]["arguments"][key] = _value(rng)
        elif k == 4 and isinstance(calls[i].get("arguments"), dict) and calls[i]["arguments"]:
            calls[i]["arguments"].pop(rng.choice(list(calls[i]["arguments"])))
        else:
            calls.insert(i, _call(rng, 99 + i, tools))


def _size(rng: random.Random) -> int:
    r = rng.random()
    if r < 0.75:
        return rng.randrange(0, 12)
    if r < 0.95:
        return rng.randrange(12, 40)
    return rng.randrange(40, 120)


def case(seed: int, index: int) -> tuple[Any, list[list[dict[str, Any]]]]:
    """Case `index` of the corpus `seed`: (expectation JSON, turns of call dicts)."""
    rng = random.Random(f"{seed}:{index}")
    tools = TOOLS[: rng.choice((1, 2, 3, 5, 5))]  # few tools: many same-name calls
    n_turns = rng.choice((1, 1, 1, 2, 3))
    turns = [[_call(rng, i, tools) for i in range(_size(rng))] for _ in range(n_turns)]
    if rng.random() < 0.2:  # parallel steps
        for turn in turns:
            step = 0
            for c in turn:
                step += rng.random() < 0.5
                c["step"] = step
    exp: dict[str, Any] = {"match": rng.choice(MODES)}
    if rng.random() < 0.3:
        exp["arguments"] = rng.choice(ARGUMENT_MODES)
    source = [json.loads(json.dumps(c)) for turn in turns for c in turn]
    _mutate(rng, source, tools)
    r = rng.random()
    if n_turns > 1 and r < 0.3:
        spec_turns = []
        for t, turn in enumerate(turns[: rng.choice((1, n_turns, n_turns + 1))] or turns):
            calls = [_expected_call(rng, c) for c in turn]
            _mutate(rng, calls, tools)
            item: dict[str, Any] = {"calls": calls}
            if rng.random() < 0.4:
                item["match"] = rng.choice(MODES)
            if rng.random() < 0.2:
                item["arguments"] = rng.choice(ARGUMENT_MODES)
            spec_turns.append(item)
            if t > 3:
                break
        exp["turns"] = spec_turns
        if rng.random() < 0.3:
            exp["allow_extra_turns"] = rng.random() < 0.5
    else:
        exp["calls"] = [_expected_call(rng, c) for c in source]
        if rng.random() < 0.25:
            exp["scope"] = rng.choice(("turn", "each_turn"))
            if exp["scope"] == "turn":
                exp["turn"] = rng.choice((0, 1, -1, 5))
    if rng.random() < 0.04 and exp.get("calls"):  # a spec too large to compile
        exp["calls"][0]["arguments"] = {f"k{i}": i for i in range(70)}
    if rng.random() < 0.1:
        exp["forbid"] = [rng.choice(("refund", "e*", "zz"))]
    if rng.random() < 0.08:
        exp["allow"] = [rng.choice(("*", "s*", "lookup"))]
    if rng.random() < 0.1:
        exp["max_calls"] = rng.randrange(0, 15)
    if rng.random() < 0.1:
        exp["min_calls"] = rng.randrange(0, 5)
    if rng.random() < 0.1:
        exp["require_no_errors"] = True
    return exp, turns


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=True, default=repr)


def outcome(seed: int, index: int) -> str:
    """The results of case `index` as canonical JSON (or its parse error)."""
    raw, turns = case(seed, index)
    try:
        exp = parse_expectation(raw)
    except InvalidExpectation as e:
        return _canonical({"invalid": str(e)})
    traj = Trajectory([[Call(**c) for c in turn] for turn in turns])
    return _canonical([r.to_dict() for r in score(exp, traj)])


def digests(seed: int, cases: int, chunk: int) -> Iterator[str]:
    """One SHA-256 (hex, 16 digits) per `chunk` consecutive cases' outcomes."""
    for start in range(0, cases, chunk):
        h = hashlib.sha256()
        for i in range(start, min(start + chunk, cases)):
            h.update(outcome(seed, i).encode())
            h.update(b"\n")
        yield h.hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.matcher.corpus")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--out", help="write every outcome, one line per case")
    parser.add_argument("--digests", action="store_true", help="print chunk digests")
    parser.add_argument("--chunk", type=int, default=100)
    args = parser.parse_args(argv)
    if args.digests:
        for d in digests(args.seed, args.cases, args.chunk):
            print(d)
        return 0
    out = open(args.out, "w") if args.out else sys.stdout  # noqa: SIM115
    try:
        for i in range(args.start, args.start + args.cases):
            out.write(outcome(args.seed, i) + "\n")
    finally:
        if out is not sys.stdout:
            out.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
