"""A/B legs of `tooltrail bench ingest`: a server with a feature off and on (its flags, or the
traffic it is sent), in interleaved pairs, each leg a fresh store and a fresh `tooltrail serve`.

Pairs run off-on, on-off, off-on… so a drift of the machine's load over the run falls on both
sides alike. Each leg reports its wall rate (acknowledged = committed spans per second, which
other processes on a shared machine disturb a lot) and the CPU seconds the server's process
tree (receivers, ingest workers, the embedded scoring worker) spent per committed span, from
the load's start until every conversation is scored (so work the feature defers past the load,
such as signals recorded at scoring, is counted); on PostgreSQL the CPU of the database's
backend processes serving the leg's database is added (the database server runs on this host,
loopback only). The cost of a pair is on/off - 1 of CPU per
span (and 1 - on/off of the wall rate); the summary is the median over pairs with the spread.
"""

from __future__ import annotations

import contextlib
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
from sqlalchemy.engine import make_url

from tooltrail.collector.bench.load import Stats
from tooltrail.collector.bench.memory import process_cpu, tree
from tooltrail.collector.bench.process import ServerProcess, serve
from tooltrail.collector.store import leases
from tooltrail.collector.store.db import make_engine, migrate

DRAIN_SECONDS = 120.0  # a leg waits at most this long for its conversations to be scored

Drive = Callable[[ServerProcess], Awaitable[Stats]]


def tree_cpu(pid: int) -> float:
    """CPU seconds of `pid`, its reaped children and its live descendants."""
    return sum(process_cpu(p, reaped=True) for p in tree(pid))


def backend_cpu(url: str) -> dict[int, float]:
    """PostgreSQL: CPU seconds of each backend process connected to `url`'s database (other
    than this query's), by pid; {} for SQLite."""
    if not url.startswith("postgresql"):
        return {}
    parsed = make_url(url)
    conninfo = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        pids = [pid for (pid,) in conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()")]
    return {pid: process_cpu(pid) for pid in pids}


def store_cpu(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds the backends used between two `backend_cpu` samples (a backend new since
    the first counts whole; one gone by the second is not seen)."""
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())


@dataclass(frozen=True)
class Side:
    """One side of a comparison: the server's flags and the load it is measured under."""

    flags: Sequence[str]
    drive: Drive


@dataclass(frozen=True)
class Leg:
    """One leg: what was committed, how fast, and the CPU it took."""

    side: str  # "off" | "on"
    spans: int
    wall_rate: float  # acknowledged (= committed) spans/s during the load
    cpu: float  # CPU seconds of the server's tree (+ PostgreSQL backends), load → all scored
    drained: bool  # every conversation scored before DRAIN_SECONDS

    @property
    def cpu_per_span(self) -> float:
        """Microseconds of CPU per committed span."""
        return 1e6 * self.cpu / self.spans if self.spans else float("inf")


@dataclass(frozen=True)
class Summary:
    """The cost of the feature over the pairs: medians and spreads, in %."""

    cpu_costs: tuple[float, ...]
    wall_costs: tuple[float, ...]

    @staticmethod
    def of(pairs: Sequence[tuple[Leg, Leg]]) -> Summary:
        cpu = tuple(100 * (on.cpu_per_span / off.cpu_per_span - 1) for off, on in pairs)
        wall = tuple(100 * (1 - on.wall_rate / off.wall_rate) if off.wall_rate else 0.0
                     for off, on in pairs)
        return Summary(cpu, wall)

    @staticmethod
    def line(costs: Sequence[float]) -> str:
        """`median (min … max)` of costs in %."""
        return (f"{statistics.median(costs):+.1f} % (pairs {min(costs):+.1f} … "
                f"{max(costs):+.1f})")


@contextlib.contextmanager
def fresh_store(base_url: str | None, tmp: Path, name: str) -> Iterator[str]:
    """A new empty store for one leg: a SQLite file in `tmp`, or (when `base_url` is a
    PostgreSQL URL) a new database on that server, dropped afterwards."""
    if base_url is None or not base_url.startswith("postgresql"):
        # a new file each leg: several comparisons in one run use the same leg names
        path = tmp / f"{name}_{uuid.uuid4().hex[:6]}.db"
        try:
            yield f"sqlite:///{path}"
        finally:
            for leftover in (path, path.with_name(path.name + "-wal"),
                             path.with_name(path.name + "-shm")):
                leftover.unlink(missing_ok=True)
        return
    parsed = make_url(base_url)
    database = f"{parsed.database}_{name}_{uuid.uuid4().hex[:6]}"
    admin = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{database}"')
    try:
        yield parsed.set(database=database).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def wait_scored(url: str, timeout: float = DRAIN_SECONDS) -> bool:
    """Wait until no conversation is left to score; False on timeout."""
    engine = make_engine(url)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with engine.connect() as conn:
                if leases.backlog(conn) == 0:
                    return True
            time.sleep(0.25)
        return False
    finally:
        engine.dispose()


async def run_leg(url: str, side: str, flags: Sequence[str],
                  expectation: Mapping[str, object] | None, warm_up: Drive, drive: Drive) -> Leg:
    """One leg on a fresh store (with `expectation` registered, unless None): warm the server
    up, let it score that, then measure `drive` from its start until everything it sent is
    scored."""
    migrate(url)
    with serve(url, *flags) as server:
        if expectation is not None:
            httpx.post(f"{server.base_url}/api/v1/expectations", json=expectation,
                       timeout=10).raise_for_status()
        await warm_up(server)
        wait_scored(url)
        pid = server.process.pid
        cpu, backends = tree_cpu(pid), backend_cpu(url)
        stats = await drive(server)
        drained = wait_scored(url)
        cpu = tree_cpu(pid) - cpu + store_cpu(backends, backend_cpu(url))
    return Leg(side, stats.acked_spans, stats.spans_per_second, cpu, drained)


async def run_pairs(pairs: int, base_url: str | None, tmp: Path, off: Side, on: Side,
                    expectation: Mapping[str, object] | None, warm_up: Drive,
                    report: Callable[[int, Leg], None]) -> list[tuple[Leg, Leg]]:
    """`pairs` interleaved (off, on) pairs of legs; `report` is told of each leg."""
    out: list[tuple[Leg, Leg]] = []
    for n in range(pairs):
        order = ("off", "on") if n % 2 == 0 else ("on", "off")
        legs: dict[str, Leg] = {}
        for side in order:
            chosen = off if side == "off" else on
            with fresh_store(base_url, tmp, f"ab{n}{side}") as url:
                leg = await run_leg(url, side, chosen.flags, expectation, warm_up, chosen.drive)
            report(n + 1, leg)
            legs[side] = leg
        out.append((legs["off"], legs["on"]))
    return out
