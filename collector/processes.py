"""Child processes of `tooltrail serve`: the ingest process pool and the embedded scoring
worker's child both start by `die_with_parent`, so a server killed with SIGKILL (no chance to
stop them) leaves no orphan holding its stderr, a core and database connections.

Children are spawned (never forked: the server has threads and open sockets) and import only
what their work needs; this module imports nothing of the service.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from types import TracebackType
from typing import Any, TypeVar

SPAWN = multiprocessing.get_context("spawn")
PARENT_POLL_SECONDS = 0.5
PR_SET_PDEATHSIG = 1
T = TypeVar("T")


def die_with_parent(parent: int) -> None:
    """In a child of `parent`: ignore Ctrl-C (the parent decides when children stop) and exit
    as soon as the parent is gone. Linux delivers SIGKILL on the parent's death (prctl); where
    that is not available, or the parent died before this ran, a watcher thread notices the
    child was re-parented."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(0)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(0)

    threading.Thread(target=watch, name="tooltrail-parent-watch", daemon=True).start()


def _up() -> None:
    """Run once in each child at start: its imports are done, it takes work."""


class ChildDied(Exception):
    """A child of the pool died (killed, out of memory) while running a call; the pool has
    been replaced by a new one."""


class ProcessPool:
    """`size` spawned children that die with this process; `await pool.run(fn, *args)` runs
    a module-level `fn` in one of them. When a child dies the pool is replaced and the call
    raises ChildDied: the caller decides whether to retry."""

    def __init__(self, size: int, name: str = "pool") -> None:
        if size < 1:
            raise ValueError("a process pool needs at least one process")
        self.size = size
        self.name = name
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
        return ProcessPoolExecutor(max_workers=self.size, mp_context=SPAWN,
                                   initializer=die_with_parent, initargs=(os.getpid(),))

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
