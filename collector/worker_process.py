"""The embedded scoring worker of `tooltrail serve`, in a child process of its own.

Scoring is CPU-bound Python: in a thread of the server it held the GIL the receivers and the
writer need (README, "Measured"). In a child process
it runs on another core. The server supervises it: wakes it when an expectation or job is
created, restarts it if it dies, stops it on shutdown, and adds its result and error counts to
the server's own `/metrics`. The child dies with the server (collector.processes), so a killed
server never leaves a scoring orphan behind.

This module is what the child imports: it must not pull in the web stack.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from dataclasses import asdict
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from tooltrail.collector import heap, logs
from tooltrail.collector.metrics import Metrics
from tooltrail.collector.processes import BACKGROUND_NICE, SPAWN, die_with_parent
from tooltrail.collector.tasks import cancel
from tooltrail.collector.worker import WorkerConfig

log = logging.getLogger(__name__)

RELAY_SECONDS = 1.0  # how often the child reports its counts
RESTART_SECONDS = 1.0  # pause before a dead worker is started again
MAX_RESTART_SECONDS = 30.0  # longest pause when it keeps dying
WAKE, STOP = b"w", b"s"


Counts = dict[str, dict[tuple[str, ...], float]]  # metric → label values → total
Report = tuple[Counts, list[float]]  # counter totals, time-to-score observations since the last


def counts(metrics: Metrics) -> Counts:
    """The totals of the counters a worker increments."""
    out: Counts = {}
    for name in ("scored", "loop_errors", "deleted_conversations"):
        for family in getattr(metrics, name).collect():
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    out.setdefault(name, {})[tuple(sample.labels.values())] = sample.value
    return out


class WorkerProcess:
    """Runs, supervises and stops one scoring worker process.

    Each child gets two pipes of its own (control: wake / stop; reports: its counts) and shares
    no lock with the server: a child killed mid-call leaves nothing locked behind (a
    multiprocessing Event or Queue shared with it could block the server forever).
    """

    def __init__(self, config: WorkerConfig, metrics: Metrics) -> None:
        self.config = config
        self.metrics = metrics
        self._ctx = SPAWN
        self._process: BaseProcess | None = None
        self._control: Connection | None = None
        self._reports: Connection | None = None
        self._seen: Counts = {}
        self._task: asyncio.Task[None] | None = None
        self._pipe_lock = threading.Lock()  # wake() runs in request threads
        self.restarts = 0

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def wake(self) -> None:
        """Start the next round now (e.g. an expectation was created)."""
        self._send(WAKE)

    async def __aenter__(self) -> WorkerProcess:
        self._start()
        self._task = asyncio.create_task(self._supervise(), name="tooltrail-worker-process")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await cancel(self._task)
        self._task = None
        self._send(STOP)
        with self._pipe_lock:  # EOF on its control pipe stops the child too (if STOP was lost)
            if self._control is not None:
                self._control.close()
                self._control = None
        process = self._process
        if process is not None:
            await asyncio.to_thread(process.join, 10)
            if process.is_alive():
                log.warning("scoring worker %s did not stop in 10 s: terminating", process.pid)
                process.terminate()
                await asyncio.to_thread(process.join, 5)
            if process.is_alive():
                process.kill()
                await asyncio.to_thread(process.join, 5)
        self._relay()
        self._close()

    def _start(self) -> None:
        control_recv, control_send = self._ctx.Pipe(duplex=False)
        reports_recv, reports_send = self._ctx.Pipe(duplex=False)
        process = self._ctx.Process(
            target=main,
            args=(asdict(self.config), control_recv, reports_send, os.getpid()),
            name="tooltrail-worker",
            daemon=True,
        )
        try:
            process.start()
        except BaseException:
            for conn in (control_recv, control_send, reports_recv, reports_send):
                conn.close()
            raise
        finally:
            control_recv.close()  # the child has its own copies now
            reports_send.close()
        os.set_blocking(control_send.fileno(), False)  # a full pipe already holds a wake
        with self._pipe_lock:
            self._process = process
            self._control, self._reports = control_send, reports_recv
        self._seen = {}  # a new process counts from zero
        log.info("scoring worker process %s started", self._process.pid)

    def _send(self, message: bytes) -> None:
        with self._pipe_lock:
            if self._control is None:
                return
            with contextlib.suppress(BlockingIOError, BrokenPipeError, OSError):
                self._control.send_bytes(message)

    def _close(self) -> None:
        with self._pipe_lock:
            for conn in (self._control, self._reports):
                if conn is not None:
                    conn.close()
            self._control = self._reports = None

    async def _supervise(self) -> None:
        delay = RESTART_SECONDS
        while True:
            await asyncio.sleep(RELAY_SECONDS / 2)
            try:
                self._relay()
                process = self._process
                if process is None or process.is_alive():
                    delay = RESTART_SECONDS
                    continue
                self.metrics.loop_errors.labels("worker_process").inc()
                log.error(
                    "scoring worker process %s died (exit code %s): starting another in %.0f s",
                    process.pid,
                    process.exitcode,
                    delay,
                )
                self.restarts += 1
                self._relay()  # its last reports
                self._close()
                await asyncio.sleep(delay)
                delay = min(delay * 2, MAX_RESTART_SECONDS)  # a crash loop backs off
                self._start()
            except Exception:  # loop boundary: supervision must go on (e.g. spawn failed)
                self.metrics.loop_errors.labels("worker_process").inc()
                log.exception("supervising the scoring worker failed; retrying")

    def _relay(self) -> None:
        """Add what the child counted since its last report to our own counters."""
        reports = self._reports
        if reports is None:
            return
        try:
            while reports.poll(0):
                totals, delays = reports.recv()
                self._add(totals)
                for delay in delays:
                    self.metrics.score_delay.observe(delay)
        except (EOFError, OSError):  # the child is gone; its last reports were read
            return

    def _add(self, totals: Counts) -> None:
        for name, by_labels in totals.items():
            counter = getattr(self.metrics, name)
            seen = self._seen.setdefault(name, {})
            for labels, total in by_labels.items():
                delta = total - seen.get(labels, 0.0)
                if delta > 0:
                    counter.labels(*labels).inc(delta)
                seen[labels] = total


def main(config: dict[str, Any], control: Connection, reports: Connection, parent: int) -> None:
    """The child: score until told to stop or until the server is gone."""
    from tooltrail.collector.store.db import make_engine
    from tooltrail.collector.worker import Worker

    die_with_parent(parent, "worker", BACKGROUND_NICE)
    cfg = WorkerConfig(**config)
    logs.setup(cfg.log_level, cfg.log_format)
    engine = make_engine(cfg.database_url, pool_size=2)
    metrics = Metrics()
    worker = Worker.from_config(engine, metrics, cfg)
    delays: list[float] = []
    worker.on_scored = delays.append  # sent with the next report, then forgotten here
    heap.settle()

    def report() -> None:
        sent: Report = (counts(metrics), delays[:])
        reports.send(sent)
        delays.clear()

    next_report = 0.0
    try:
        while True:  # until STOP; die_with_parent ends us if the server is gone
            busy = worker.safe_round()
            now = time.monotonic()
            if now >= next_report:
                report()
                next_report = now + RELAY_SECONDS
            if _stop_asked(control, 0.0 if busy else worker.pause):
                break
        report()
    except (BrokenPipeError, EOFError):  # the server is gone
        pass
    finally:
        engine.dispose()


def _stop_asked(control: Connection, timeout: float) -> bool:
    """Wait up to `timeout` for a message; drain them all; True if one was STOP."""
    stop = False
    try:
        while control.poll(timeout):
            message = control.recv_bytes()  # always read: an unread message keeps poll() true
            stop = stop or message == STOP
            timeout = 0.0
    except EOFError:  # the server closed its end: it is gone or stopping
        return True
    return stop
