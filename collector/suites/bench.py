"""`tooltrail bench check`: `tooltrail check` over recorded conversations, as CI runs it.

Writes N conversations (default 10,000) as OTLP JSON Lines (the Collector `file` exporter's
format; 100 conversations a line), each two agent turns of one `invoke_agent` root, chat spans
and tool spans (about 30 spans), and a 20-expectation suite covering every order mode; then
runs `tooltrail check` in a child process (one process, as in CI) and prints conversations/s
and the child's peak RSS; then (`--stages N`) times each stage of `check` in process on N
conversations and prints CPU seconds per 1,000 conversations of each. Bounded: one run,
`--timeout` seconds at most.

By default every expectation applies to every conversation (20 matcher evaluations each);
`--selective` gives each expectation a conversation selector, as imported suites have, so each
conversation is picked by 2 of the 20. The verdicts are checked against what was written:
a conversation left as the script goes passes everything it is picked by, and (without
`--selective`) one with a wrong argument or a call left out fails at least one expectation.
"""

from __future__ import annotations

import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tooltrail.collector.clihelp import HelpFormatter, Parser

TOOLS = ("lookup_order", "get_customer", "search_products", "issue_refund", "send_email",
         "get_weather", "get_time", "convert_currency")
PER_LINE = 100


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": str(value)}}


def _span(trace: str, span: str, parent: str | None, name: str, start: int, end: int,
          attrs: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"traceId": trace, "spanId": span, "name": name, "kind": 1,
                           "startTimeUnixNano": str(start), "endTimeUnixNano": str(end),
                           "attributes": [_attr(k, v) for k, v in attrs.items()],
                           "status": {}}
    if parent:
        out["parentSpanId"] = parent
    return out


SCRIPT = [[(TOOLS[(t * 9 + i) % len(TOOLS)], {"order_id": t * 9 + i, "city": "Paris"})
           for i in range(9)] for t in range(2)]  # the trajectory every agent run follows
PERTURBED = 0.1  # share of conversations with one wrong argument or one call left out


def conversation_spans(rng: random.Random, index: int,
                       perturbed: set[str] | None = None) -> list[dict[str, Any]]:
    """Two turns: root + 5 chat spans + 9 tool spans each (30 spans, 18 tool calls); the key
    of a conversation that strays from SCRIPT is added to `perturbed`."""
    key = f"bench-{index:06d}"
    spans = []
    clock = 1_700_000_000_000_000_000 + index * 1_000_000_000
    script = [list(turn) for turn in SCRIPT]
    if rng.random() < PERTURBED:
        if perturbed is not None:
            perturbed.add(key)
        turn = script[rng.randrange(2)]
        k = rng.randrange(len(turn))
        if rng.random() < 0.5:
            del turn[k]
        else:
            turn[k] = (turn[k][0], {**turn[k][1], "city": "Rome"})
    for calls in script:
        trace = f"{rng.getrandbits(128):032x}"
        root = f"{rng.getrandbits(64):016x}"
        start = clock
        children = []
        pending = list(calls)
        for step in range(5):
            children.append(_span(trace, f"{rng.getrandbits(64):016x}", root, "chat model",
                                  clock, clock + 1000, {"gen_ai.operation.name": "chat",
                                                        "gen_ai.request.model": "bench"}))
            clock += 2000
            for _ in range(2 if step < 4 else 1):
                if not pending:
                    break
                tool, args = pending.pop(0)
                children.append(_span(
                    trace, f"{rng.getrandbits(64):016x}", root, f"execute_tool {tool}", clock,
                    clock + 1000,
                    {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool,
                     "gen_ai.tool.call.id": f"call_{rng.getrandbits(32):08x}",
                     "gen_ai.tool.call.arguments": json.dumps(args),
                     "gen_ai.tool.call.result": json.dumps({"ok": True})}))
                clock += 2000
        spans.append(_span(trace, root, None, "invoke_agent support", start, clock,
                           {"gen_ai.operation.name": "invoke_agent",
                            "gen_ai.agent.name": "support", "gen_ai.conversation.id": key}))
        spans.extend(children)
        clock += 10_000
    return spans


def write_inputs(path: Path, conversations: int, seed: int = 7,
                 perturbed: set[str] | None = None) -> int:
    """OTLP JSON Lines; returns the number of spans written (`perturbed`: see
    `conversation_spans`)."""
    rng = random.Random(seed)
    total = 0
    with path.open("w") as out:
        for first in range(0, conversations, PER_LINE):
            spans = [s for i in range(first, min(first + PER_LINE, conversations))
                     for s in conversation_spans(rng, i, perturbed)]
            total += len(spans)
            request = {"resourceSpans": [{
                "resource": {"attributes": [_attr("service.name", "support-agent")]},
                "scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}]}]}
            out.write(json.dumps(request, separators=(",", ":")) + "\n")
    return total


def suite(count: int = 20, selective: bool = False) -> dict[str, Any]:
    """`count` expectations over every mode and a few constraints, each satisfied by SCRIPT.
    `selective`: expectations 2j and 2j+1 pick the conversations whose index ends in j % 10."""
    flat = [c for turn in SCRIPT for c in turn]
    expectations = []
    for i in range(count):
        kind = i % 5
        exp: dict[str, Any] = {"id": f"exp-{i:02d}"}
        if kind == 0:  # the whole trajectory, in order, exact arguments
            exp.update(match="strict", arguments="exact",
                       calls=[{"name": n, "arguments": a} for n, a in flat])
        elif kind == 1:  # a few calls in order, partial arguments
            exp.update(match="in_order", calls=[{"name": n, "arguments": {"order_id":
                                                 a["order_id"]}} for n, a in flat[i % 4::5]])
        elif kind == 2:  # one turn, any order
            exp.update(scope="turn", turn=i % 2, match="unordered",
                       calls=[{"name": n, "arguments": a} for n, a in SCRIPT[i % 2]])
        elif kind == 3:  # these calls among others
            exp.update(match="superset", calls=[{"name": n, "arguments": {"city": "Paris"}}
                                                for n, _ in flat[i % 3::4]], forbid=["delete_*"])
        else:  # only these tools, within a budget
            exp.update(match="subset", arguments="ignore",
                       calls=[{"name": n} for n in TOOLS], max_calls=40)
        if selective:
            exp["selector"] = {"conversation": f"bench-*{i // 2 % 10}"}
        expectations.append(exp)
    return {"name": "bench", "expectations": expectations}


def stages(directory: Path, suite_path: Path, conversations: int) -> dict[str, float]:
    """CPU seconds per 1,000 conversations of each stage of `check`, in this process, on the
    first `conversations` of the benchmark's input: decoding (the receivers' codec, as
    `inputs.decode_serialised` calls it), extraction, storing (the rest of `run.remember`: rows and
    the in-memory store), scoring (`run.collect`: trajectories read back, the matcher, the
    spool) and the table."""
    from tooltrail.collector import heap
    from tooltrail.collector.extract import DEFAULT_CONVERSATION_KEYS, ExtractOptions
    from tooltrail.collector.ingest import extract_safely
    from tooltrail.collector.memory_store import MemoryStore
    from tooltrail.collector.receivers.codec import JSON
    from tooltrail.collector.suites import run
    from tooltrail.collector.suites.inputs import decode_serialised
    from tooltrail.collector.suites.report import render
    from tooltrail.collector.suites.suite import load_suite

    inputs = directory / "stages.jsonl"
    write_inputs(inputs, conversations)
    options = ExtractOptions(DEFAULT_CONVERSATION_KEYS)
    lines = inputs.read_bytes().splitlines()
    clock = time.process_time
    with heap.few_full_collections():  # as `check` runs (`run.check_offline`)
        started = clock()
        requests = [decode_serialised(line, JSON) for line in lines]  # as `check` decodes
        decoded = clock()
        for request, _, raw in requests:
            extract_safely(request, options, raw)
        extracted = clock()
        del requests
        store = MemoryStore()
        begun = clock()
        reads = run.remember(store, [str(inputs)], options)
        stored = clock()
        report = run.collect(store, load_suite(suite_path), reads, directory,
                             with_conversations=False, with_results=False)
        scored = clock()
        for _ in render(report, "table"):
            pass
        tabled = clock()
    per = 1000 / conversations
    return {"decode": (decoded - started) * per, "extract": (extracted - decoded) * per,
            "store": ((stored - begun) - (extracted - started)) * per,
            "score": (scored - stored) * per, "table": (tabled - scored) * per}


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="tooltrail bench check", description=__doc__,
                                     formatter_class=HelpFormatter)
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--expectations", type=int, default=20)
    parser.add_argument("--selective", action="store_true",
                        help="each expectation selects a tenth of the conversations")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--stages", type=int, default=1000, metavar="N",
                        help="also time each stage in process on N conversations (at most all; "
                             "0: not)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tooltrail-bench-check-") as tmp:
        inputs = Path(tmp) / "spans.jsonl"
        perturbed: set[str] = set()
        spans = write_inputs(inputs, args.conversations, perturbed=perturbed)
        suite_path = Path(tmp) / "suite.json"
        suite_path.write_text(json.dumps(suite(args.expectations, args.selective)))
        print(f"{args.conversations:,} conversations, {spans:,} spans "
              f"({inputs.stat().st_size / 1e6:.0f} MB OTLP JSON Lines), "
              f"{args.expectations} expectations"
              f"{' (each selecting a tenth)' if args.selective else ' (each applies to all)'}")
        started = time.perf_counter()
        child = subprocess.run(
            [sys.executable, "-m", "tooltrail", "check", str(suite_path), str(inputs),
             "--format", args.format],
            capture_output=True, timeout=args.timeout,
            env={**os.environ, "PYTHONHASHSEED": "0"}, check=False)
        took = time.perf_counter() - started
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        sample = min(args.stages, args.conversations)
        timed = stages(Path(tmp), suite_path, sample) if sample > 0 else None
    peak = usage.ru_maxrss * 1024
    cpu = usage.ru_utime + usage.ru_stime
    if child.returncode not in (0, 1):
        print(child.stderr.decode(errors="replace")[-2000:], file=sys.stderr)
        return 1
    verdicts = _verdicts(child.stdout.decode(), args.format)
    print(f"check: {took:.1f} s wall, {cpu:.1f} s CPU; {args.conversations / took:,.0f} "
          f"conversations/s (wall), {args.conversations / cpu:,.0f} per CPU second; "
          f"{len(verdicts):,} verdicts, exit {child.returncode}, peak RSS {peak / 2**20:.0f} MB")
    failing = {conv for status, conv in verdicts if status == "fail"}
    wrong = sorted(failing - perturbed)
    if not args.selective:
        wrong += sorted(perturbed - failing)
    if timed:
        print(f"CPU seconds per 1,000 conversations by stage (in process, {sample:,} "
              "conversations): " + ", ".join(f"{k} {v:.2f}" for k, v in timed.items())
              + f"; total {sum(timed.values()):.2f}")
    print(f"verdicts as written: {len(perturbed):,} perturbed conversations, "
          f"{len(failing):,} with a failure, {len(wrong)} wrong")
    if wrong:
        print(f"wrong verdicts on: {', '.join(wrong[:10])}", file=sys.stderr)
        return 1
    return 0


def _verdicts(out: str, form: str) -> list[tuple[str, str]]:
    """(pass | fail, conversation) of each verdict `check` printed."""
    if form == "json":
        return [(c["status"], c["conversation"]) for c in json.loads(out)["checks"]]
    rows = (line.split() for line in out.splitlines())
    return [(row[0].lower(), row[2]) for row in rows
            if len(row) >= 3 and row[0] in ("PASS", "FAIL")]


if __name__ == "__main__":
    sys.exit(main())
