"""Child processes of `tooltrail serve`: the ingest process pool (ProcessPool), the embedded
scoring worker's child (collector.worker_process) and the children that score `/score`
requests under a deadline (DeadlineChildren) all start by `die_with_parent`, so a server
killed with SIGKILL (no chance to stop them) leaves no orphan holding its stderr, a core and
database connections.

Children are spawned (never forked: the server has threads and open sockets) and import only
what their work needs; this module imports nothing of the service.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from types import TracebackType
from typing import Any, TypeVar

SPAWN = multiprocessing.get_context("spawn")
PARENT_POLL_SECONDS = 0.5
PR_SET_PDEATHSIG = 1
PR_SET_NAME = 15  # the thread's name, as `ps`, `top` and /proc/PID/comm show it (15 bytes)
NAME_PREFIX = "tt-"  # a child's name is this and its role: tt-ingest, tt-worker, tt-score
# How much lower than the server a background child runs (os.nice): scoring can wait, while a
# client waits on every acknowledgement, so under full load the cores go to ingest first.
BACKGROUND_NICE = 10
T = TypeVar("T")


def die_with_parent(parent: int, role: str, nice: int = 0) -> None:
    """In a child of `parent`: ignore Ctrl-C (the parent decides when children stop) and exit
    as soon as the parent is gone. Linux delivers SIGKILL on the parent's death (prctl); where
    that is not available, or the parent died before this ran, a watcher thread notices the
    child was re-parented. A background child (`nice`, e.g. BACKGROUND_NICE) yields the CPU
    to the server and the ingest children when they want it. The child is named for its
    `role` (NAME_PREFIX + role, Linux), so operators and `tooltrail bench ingest` tell the
    children apart."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if nice:
        with contextlib.suppress(OSError):
            os.nice(nice)
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        libc.prctl(PR_SET_NAME, (NAME_PREFIX + role).encode()[:15])
    if os.getppid() != parent:
        os._exit(0)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(0)

    threading.Thread(target=watch, name="tooltrail-parent-watch", daemon=True).start()


def long_lived() -> None:
    """Once a process is set up: what is alive now (modules, a server's parts, a child's
    context) lives as long as the process. Collect the garbage among it, then take it out of
    the cyclic collector's generations (`gc.freeze`): the collections that each request's
    short-lived objects trigger then traverse those objects only, not every module's, which
    otherwise costs as much as a good part of the request's own work."""
    gc.collect()
    gc.freeze()


_context: Any = None  # in a pool child: its pool's context, unpickled once as the child started


def _start(parent: int, role: str, context: Any) -> None:
    """A pool child's initializer. `context` was unpickled to call it, which imported every
    module it refers to: the child's first call does not pay for them."""
    global _context
    _context = context
    die_with_parent(parent, role)
    long_lived()


def _with_context(fn: Callable[..., T], *args: Any) -> T:
    return fn(_context, *args)


def _up() -> None:
    """Run once in each child at start: its imports are done, it takes work."""


class ChildDied(Exception):
    """A child of the pool died (killed, out of memory) while running a call; the pool has
    been replaced by a new one."""


class ProcessPool:
    """`size` spawned children that die with this process; `await pool.run(fn, *args)` runs
    a module-level `fn` in one of them. When a child dies the pool is replaced and the call
    raises ChildDied: the caller decides whether to retry. `context`: a picklable object each
    child receives once, as it starts, and `run_with_context` passes to its calls: it is not
    pickled with every call, its caches last as long as the child, and the imports it needs are
    done before the pool is up, not during its first calls."""

    def __init__(self, size: int, name: str = "pool", context: Any = None) -> None:
        if size < 1:
            raise ValueError("a process pool needs at least one process")
        self.size = size
        self.name = name
        self.context = context
        self._executor: ProcessPoolExecutor | None = None

    @property
    def running(self) -> bool:
        return self._executor is not None

    async def __aenter__(self) -> ProcessPool:
        """Start the children and wait until each is up (a bad start fails here, not later)."""
        self._executor = self._new()
        loop = asyncio.get_running_loop()
        await asyncio.gather(*(loop.run_in_executor(self._executor, _up)
                               for _ in range(self.size)))
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop the children, cancelling calls not started. Safe if never started."""
        if self._executor is not None:
            executor, self._executor = self._executor, None
            await asyncio.to_thread(executor.shutdown, wait=True, cancel_futures=True)

    def _new(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(max_workers=self.size, mp_context=SPAWN, initializer=_start,
                                   initargs=(os.getpid(), self.name, self.context))

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        if self._executor is None:
            raise RuntimeError(f"the {self.name} process pool is not running")
        executor = self._executor
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(executor, fn, *args)
        except BrokenProcessPool as exc:
            if self._executor is executor:  # calls that broke with it replace it once
                self._executor = self._new()
                executor.shutdown(wait=False, cancel_futures=True)
            raise ChildDied(f"a {self.name} process died") from exc

    async def run_with_context(self, fn: Callable[..., T], *args: Any) -> T:
        """`run(fn)` with the pool's context as `fn`'s first argument, as the child has it."""
        return await self.run(_with_context, fn, *args)


class OverDeadline(Exception):
    """A call ran past its deadline; its child was killed."""


def _serve_calls(conn: Connection, parent: int, role: str) -> None:
    """A child of DeadlineChildren: run each (fn, args) it is sent, send back the outcome."""
    die_with_parent(parent, role)
    conn.send(("ready", None))
    while True:
        try:
            fn, args = conn.recv()
        except (EOFError, OSError):  # the parent closed its end: done
            return
        try:
            outcome: tuple[str, Any] = ("ok", fn(*args))
        except Exception as exc:  # the caller's to handle, as if it had run there
            outcome = ("error", exc)
        conn.send(outcome)


@dataclass
class _Child:
    process: BaseProcess
    conn: Connection

    def kill(self) -> None:
        self.conn.close()
        self.process.kill()
        self.process.join(5)

    def close(self) -> None:
        self.conn.close()  # EOF: the child returns
        self.process.join(5)
        if self.process.is_alive():
            self.kill()


class DeadlineChildren:
    """Children that each run one call at a time, every call with a wall-clock deadline: a call
    still running at its deadline has its child SIGKILLed (whatever it is doing, C code
    included, and leaving nothing half-done in this process) and raises OverDeadline.

    At most `size` calls run at once (more wait for a child, that wait not counted against
    their deadline); idle children are kept for the next calls. `call` blocks its thread."""

    def __init__(self, size: int, name: str = "call", start_seconds: float = 60.0) -> None:
        if size < 1:
            raise ValueError("at least one child")
        self.name = name
        self.start_seconds = start_seconds
        self._slots = threading.BoundedSemaphore(size)
        self._idle: list[_Child] = []
        self._lock = threading.Lock()

    def call(self, deadline_seconds: float, fn: Callable[..., T], *args: Any) -> T:
        """fn(*args) in a child (`fn` module-level, arguments and result picklable); raises
        what fn raised, or OverDeadline."""
        with self._slots:
            child = self._take()
            kind: str
            value: Any
            try:
                child.conn.send((fn, args))
                ready = child.conn.poll(max(0.0, deadline_seconds))
                kind, value = child.conn.recv() if ready else ("late", None)
            except (EOFError, OSError) as exc:  # it died on its own (out of memory)
                child.kill()
                raise ChildDied(f"a {self.name} process died") from exc
            except BaseException:
                child.kill()
                raise
            if kind == "late":
                child.kill()
                raise OverDeadline(f"{self.name} ran past {deadline_seconds} s")
            with self._lock:
                self._idle.append(child)
        if kind == "error":
            raise value
        result: T = value
        return result

    def _take(self) -> _Child:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        parent_end, child_end = SPAWN.Pipe()
        process = SPAWN.Process(target=_serve_calls, args=(child_end, os.getpid(), self.name),
                                name=f"tooltrail-{self.name}", daemon=True)
        process.start()
        child_end.close()
        child = _Child(process, parent_end)
        try:  # its imports are done before a deadline's clock starts
            if parent_end.poll(self.start_seconds):
                parent_end.recv()
                return child
        except (EOFError, OSError):
            pass
        child.kill()
        raise ChildDied(f"a {self.name} process did not start")

    def close(self) -> None:
        """Stop the idle children (calls running keep theirs until they end)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for child in idle:
            child.close()
