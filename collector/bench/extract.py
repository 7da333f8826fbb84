"""`tooltrail bench extract`: CPU µs per span of extraction alone — `extract_safely` on decoded
requests, as an ingest child runs it — per walk, on the benchmark traffic
(`collector.bench.traffic`), and optionally the same for another install, in interleaved legs.

This process builds `--requests` protobuf request bodies once and writes them to a temporary
file. Each leg is a fresh process that reads those bytes, decodes them (not timed), extracts one
request to warm up, then times `--passes` passes of extraction over all of them with
`time.process_time`; the leg's figure is its median pass. A leg's walk is chosen as a server's
is, by `TOOLTRAIL_PURE_PYTHON` (0: compiled, 1: pure). Legs run round by round, every
(install, walk) once per round in the same order, for `--rounds` rounds; each prints the load
average it started at, and the figure of an (install, walk) is the median of its legs.

`--python PYTHON` adds another install, the one before (say an older commit's virtualenv): its
legs run this file with that interpreter, without PYTHONPATH and from a temporary directory, so
they import that install's `collector` (each leg says which) and extract the same bytes. An
install without the compiled walk has its pure walk only. The figures end with each walk of this
install over the other install's same walk, or its only one (`after / before`).

Only the decoding and extraction modules are imported at the top, so that an older install
whose bench modules differ can run the legs.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WALKS = ("compiled", "pure")
WALK_ENV = {"compiled": "0", "pure": "1"}  # TOOLTRAIL_PURE_PYTHON of each walk
THIS = "this install"
# runs this file as __main__ under another interpreter without putting its folder on sys.path
RUNNER = ("import runpy, sys; sys.argv = sys.argv[1:]; "
          "runpy.run_path(sys.argv[0], run_name='__main__')")
LEG_TIMEOUT = 300.0  # seconds: a leg over a dozen requests takes a few


def write_bodies(path: Path, bodies: list[bytes]) -> None:
    """The request bodies, each prefixed by its length (4 bytes, big-endian)."""
    with path.open("wb") as out:
        for body in bodies:
            out.write(struct.pack(">I", len(body)))
            out.write(body)


def read_bodies(path: Path) -> list[bytes]:
    data, at, bodies = path.read_bytes(), 0, []
    while at < len(data):
        (size,) = struct.unpack_from(">I", data, at)
        bodies.append(data[at + 4:at + 4 + size])
        at += 4 + size
    return bodies


def leg(bodies_path: Path, walk: str, passes: int) -> dict[str, Any]:
    """One leg, in this process: extraction's CPU µs per span on `walk`, or `walk` None when
    this install does not have it."""
    # the other install may be from before the one import name `tooltrail`
    try:
        base = importlib.import_module("tooltrail.collector")
    except ImportError:
        base = importlib.import_module("collector")
    otlp = importlib.import_module(f"{base.__name__}.extract.otlp")
    ExtractOptions = importlib.import_module(f"{base.__name__}.extract").ExtractOptions
    extract_safely = importlib.import_module(f"{base.__name__}.ingest").extract_safely
    codec = importlib.import_module(f"{base.__name__}.receivers.codec")
    decode_body, PROTOBUF = codec.decode_body, codec.PROTOBUF
    # an install from before the compiled walk has neither name: its one walk is the pure one
    compiled = getattr(otlp, "COMPILED_WALK", None) is not None
    if compiled != (walk == "compiled"):
        return {"walk": None, "collector": base.__file__}
    requests = [decode_body(body, PROTOBUF, None, 1 << 30)[0] for body in read_bodies(bodies_path)]
    spans = sum(len(ss.spans) for r in requests for rs in r.resource_spans
                for ss in rs.scope_spans)
    options = ExtractOptions()
    calls = len(extract_safely(requests[0], options).calls)  # warm-up
    timed: list[float] = []
    for _ in range(passes):
        t0 = time.process_time()
        for request in requests:
            extract_safely(request, options)
        timed.append((time.process_time() - t0) * 1e6 / spans)
    return {"walk": walk, "collector": base.__file__, "spans": spans,
            "calls_first_request": calls, "passes": timed, "us_per_span": statistics.median(timed)}


@dataclass
class Side:
    """The legs of one (install, walk)."""

    install: str
    python: str
    walk: str
    figures: list[float] = field(default_factory=list)
    available: bool = True

    @property
    def label(self) -> str:
        return f"{self.install} {self.walk}"


def run_leg(side: Side, bodies: Path, passes: int, tmp: str) -> dict[str, Any]:
    env = {**os.environ, "TOOLTRAIL_PURE_PYTHON": WALK_ENV[side.walk]}
    if side.install != THIS:
        env.pop("PYTHONPATH", None)  # the other install's own collector, not this one's
    done = subprocess.run([side.python, "-c", RUNNER, __file__, "--leg", str(bodies),
                           "--walk", side.walk, "--passes", str(passes)],
                          capture_output=True, text=True, env=env, cwd=tmp,
                          timeout=LEG_TIMEOUT, check=False)
    if done.returncode != 0:
        raise SystemExit(f"tooltrail bench extract: the leg {side.label} ({side.python}) "
                         f"failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def ratios(sides: list[Side]) -> dict[str, float]:
    """Each walk of this install over the other install's same walk, or its only one."""
    before = {s.walk: s for s in sides if s.install != THIS and s.available and s.figures}
    out: dict[str, float] = {}
    for after in (s for s in sides if s.install == THIS and s.available and s.figures):
        ref = before.get(after.walk) or next(iter(before.values()), None)
        if ref is not None:
            out[f"{after.label} / {ref.label}"] = (statistics.median(after.figures)
                                                  / statistics.median(ref.figures))
    return out


def bench(args: argparse.Namespace) -> dict[str, Any]:
    from tooltrail.collector.bench.traffic import RequestFactory, Shape

    factory = RequestFactory(Shape(spans=args.spans_per_request))
    sides = [Side(THIS, sys.executable, walk) for walk in args.paths]
    if args.python:
        sides += [Side(args.python, args.python, walk) for walk in args.paths]
    print(f"tooltrail bench extract — {args.requests} requests of {factory.span_count} spans "
          f"({factory.tool_calls} tool spans), {args.passes} passes per leg, "
          f"{args.rounds} rounds of {len(sides)} legs", flush=True)
    report: dict[str, Any] = {"legs": []}
    with tempfile.TemporaryDirectory() as tmp:
        bodies = Path(tmp) / "bodies"
        write_bodies(bodies, [factory.make()[0] for _ in range(args.requests)])
        for n in range(1, args.rounds + 1):
            for side in (s for s in sides if s.available):
                load = load_average()
                result = run_leg(side, bodies, args.passes, tmp)
                if result["walk"] is None:
                    side.available = False
                    print(f"  round {n}, {side.label}: n/a (not in {result['collector']})",
                          flush=True)
                    continue
                side.figures.append(result["us_per_span"])
                report["legs"].append({"round": n, "install": side.install, "walk": side.walk,
                                       "load": load, **result})
                print(f"  round {n}, {side.label}: {result['us_per_span']:.2f} µs/span "
                      f"(passes {' / '.join(f'{p:.2f}' for p in result['passes'])}; "
                      f"load {load}; {result['calls_first_request']} calls in request 1; "
                      f"{result['collector']})", flush=True)
    medians = {s.label: statistics.median(s.figures) for s in sides if s.figures}
    for label, value in medians.items():
        print(f"  median {label}: {value:.2f} µs/span", flush=True)
    report["medians"] = medians
    report["ratios"] = ratios(sides)
    for label, value in report["ratios"].items():
        print(f"  after / before, {label}: {value:.3f} ({(value - 1) * 100:+.1f} %)", flush=True)
    return report


def parser() -> argparse.ArgumentParser:
    from tooltrail.collector.clihelp import HelpFormatter, Parser

    p = Parser(prog="tooltrail bench extract", description=__doc__,
               formatter_class=HelpFormatter)
    p.add_argument("--requests", type=int, default=12, help="requests each pass extracts")
    p.add_argument("--spans-per-request", type=int, default=500)
    p.add_argument("--passes", type=int, default=5, help="timed passes per leg (its median)")
    p.add_argument("--rounds", type=int, default=3,
                   help="rounds of legs, one leg of each install and walk per round")
    p.add_argument("--paths", nargs="+", choices=WALKS, default=list(WALKS),
                   help="the walks to measure (an install without one skips it)")
    p.add_argument("--python", metavar="PYTHON",
                   help="another install's interpreter (the build before) measured in the "
                        "same rounds")
    p.add_argument("--json", help="also write the figures to this file")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    for name in ("requests", "passes", "rounds", "spans_per_request"):
        if getattr(args, name) < 1:
            parser().error(f"--{name.replace('_', '-')} must be at least 1")
    report = bench(args)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0


def leg_main(argv: list[str]) -> int:
    """One leg, in the child `run_leg` starts under either install's interpreter: a plain
    parser, as this file runs there before it knows which import name that install has."""
    p = argparse.ArgumentParser(prog="tooltrail bench extract (leg)")
    p.add_argument("--leg", type=Path, required=True)
    p.add_argument("--walk", choices=WALKS, required=True)
    p.add_argument("--passes", type=int, required=True)
    args = p.parse_args(argv)
    print(json.dumps(leg(args.leg, args.walk, args.passes)))
    return 0


if __name__ == "__main__":
    raise SystemExit(leg_main(sys.argv[1:]))
