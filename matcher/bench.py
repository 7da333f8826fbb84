"""Matcher benchmark: evaluations per second by trajectory size and order mode.

    tooltrail bench matcher [--sizes 10,100,1000] [--seconds 1.0] [--passing-only]

(`python -m tooltrail.matcher.bench` runs the same, without the service installed.)

Trajectories mix a handful of tools with realistic arguments; expectations list
`partial` arguments with `$approx`, `$regex` and `$in`. Each size and mode is timed
twice: a passing trajectory, and a failing variant (a wrong argument and a missing
call); `--passing-only` skips the failing variants.
Runs on one core (a single thread); rates are per CPU second of the process.
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

from .scoring import score
from .spec import MODES, Expectation, parse_expectation
from .types import Call, Trajectory

_TOOLS = ("search", "lookup_order", "get_customer", "issue_refund", "send_email", "read_file")
_STATUSES = ("open", "shipped", "late", "refunded")


def _arguments(rng: random.Random, name: str, i: int) -> dict[str, Any]:
    args: dict[str, Any] = {"request_id": f"req-{i}", "session": "s-1"}
    if name == "search":
        args.update(query=f"order {rng.randrange(10**6)} status", limit=rng.choice((5, 10)))
    elif name in ("lookup_order", "get_customer"):
        args.update(order_id=rng.randrange(10**6), include={"items": True, "history": False})
    elif name == "issue_refund":
        args.update(amount=round(rng.uniform(1, 500), 2), reason="late delivery")
    elif name == "send_email":
        args.update(to=f"user{i}@example.com", status=rng.choice(_STATUSES))
    else:
        args.update(path=f"/data/{i}.json", tags=["a", "b", str(i % 7)])
    return args


def _expected_arguments(name: str, args: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"request_id": args["request_id"]}
    if name == "search":
        spec["query"] = {"$regex": r"order \d+ status"}
    elif name in ("lookup_order", "get_customer"):
        spec["order_id"] = args["order_id"]
        spec["include"] = {"items": True}
    elif name == "issue_refund":
        spec["amount"] = {"$approx": args["amount"], "$tol": 0.01}
    elif name == "send_email":
        spec["status"] = {"$in": list(_STATUSES)}
    else:
        spec["tags"] = {"$contains": "a"}
    return spec


def case(
    size: int, mode: str, *, failing: bool = False, seed: int = 7
) -> tuple[Expectation, Trajectory]:
    """A trajectory of `size` calls and an expectation it passes (unless `failing`)."""
    rng = random.Random(seed)
    calls = []
    for i in range(size):
        name = rng.choice(_TOOLS)
        calls.append(Call(name, _arguments(rng, name, i), result={"ok": True}))
    expected: list[dict[str, Any]] = [
        {"name": c.name, "arguments": _expected_arguments(c.name, c.arguments)} for c in calls
    ]
    if mode in ("in_order", "superset"):
        expected = [e for i, e in enumerate(expected) if i % 5 != 4]
    if failing:
        expected[len(expected) // 2]["arguments"]["request_id"] = "req-wrong"
        calls.pop(len(calls) // 3)
    exp = parse_expectation({"match": mode, "arguments": "partial", "calls": expected})
    return exp, Trajectory.from_calls(calls)


def measure(exp: Expectation, traj: Trajectory, seconds: float) -> float:
    """Evaluations per CPU second of this process (one thread: one core), timed over at
    least `seconds`; CPU time keeps other processes on the machine out of the figure."""
    score(exp, traj)  # warm caches (the trajectory's flattened calls and steps)
    n = 0
    batch = 1
    start = time.process_time()
    while True:
        for _ in range(batch):
            score(exp, traj)
        n += batch
        elapsed = time.process_time() - start
        if elapsed >= seconds:
            return n / elapsed
        batch = min(batch * 2, 10_000)


def main(argv: list[str] | None = None) -> int:
    """Print evaluations/s per size and mode, and ms per 1,000-call unordered evaluation."""
    parser = argparse.ArgumentParser(prog="tooltrail bench matcher", description=__doc__)
    parser.add_argument("--sizes", default="10,100,1000")
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    parser.add_argument("--passing-only", action="store_true", help="skip failing variants")
    parser.add_argument("--failing", action="store_true", help=argparse.SUPPRESS)  # the default
    parser.add_argument("--unordered-size", type=int, default=1000, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    variants = [False] if args.passing_only else [False, True]
    print(f"{'calls':>6} {'mode':<10} {'variant':<8} {'evals/s':>12} {'ms/eval':>9}")
    for size in sizes:
        for mode in MODES:
            for failing in variants:
                exp, traj = case(size, mode, failing=failing)
                results = score(exp, traj)
                assert results[0].passed is not failing, (size, mode, results[0].reason)
                rate = measure(exp, traj, args.seconds)
                variant = "failing" if failing else "passing"
                print(f"{size:>6} {mode:<10} {variant:<8} {rate:>12,.0f} {1000 / rate:>9.3f}")
    size = args.unordered_size
    exp, traj = case(size, "unordered")
    rate = measure(exp, traj, args.seconds)
    print(f"{size:,}-call unordered: {1000 / rate:.2f} ms per evaluation")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
