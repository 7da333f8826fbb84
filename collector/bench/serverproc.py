"""Running `tooltrail serve` as a subprocess on loopback ports the OS picks, and sampling the
resident memory of it and its children (the ingest worker processes)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

READY = re.compile(r"tooltrail listening: http=127\.0\.0\.1:(\d+) grpc=127\.0\.0\.1:(\d+)")


def rss_bytes(pid: int) -> int:
    """Resident set size of one process (0 if it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def pss_bytes(pid: int) -> int:
    """Proportional set size (shared pages split between their users; 0 if gone)."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def children(pid: int) -> list[int]:
    """Direct children of `pid` (Linux /proc)."""
    found: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            text = (task / "children").read_text().split()
            found += [int(t) for t in text]
    except (OSError, ValueError):
        pass
    return found


def tree_rss(pid: int) -> tuple[int, int, int]:
    """(RSS of `pid`, RSS summed over `pid` and its descendants, PSS summed likewise)."""
    own = rss_bytes(pid)
    total = own
    pss = pss_bytes(pid)
    stack = children(pid)
    seen = 0
    while stack and seen < 256:
        child = stack.pop()
        seen += 1
        total += rss_bytes(child)
        pss += pss_bytes(child)
        stack += children(child)
    return own, total, pss


@dataclass
class MemorySampler:
    """Samples a process tree's RSS every `interval` seconds in a thread, keeping the peaks."""

    pid: int
    interval: float = 0.1
    peak_main: int = 0
    peak_total: int = 0
    peak_pss: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> MemorySampler:
        """Start sampling."""
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def reset(self) -> None:
        """Forget the peaks so far."""
        self.peak_main = self.peak_total = self.peak_pss = 0

    def _run(self) -> None:
        while not self._stop.is_set():
            own, total, pss = tree_rss(self.pid)
            self.peak_main = max(self.peak_main, own)
            self.peak_total = max(self.peak_total, total)
            self.peak_pss = max(self.peak_pss, pss)
            self._stop.wait(self.interval)

    def stop(self) -> None:
        """Stop sampling."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)


@dataclass
class ServerProcess:
    """A running server: its process, ports and log."""

    process: subprocess.Popen[str]
    http_port: int
    grpc_port: int
    log: list[str]

    @property
    def base_url(self) -> str:
        """The HTTP base URL."""
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def grpc_endpoint(self) -> str:
        """host:port of OTLP/gRPC."""
        return f"127.0.0.1:{self.grpc_port}"


@contextmanager
def serve(database_url: str, *flags: str, timeout: float = 60.0) -> Iterator[ServerProcess]:
    """Start `tooltrail serve` on ports 0 (loopback), yield once it listens, stop it after."""
    command = [sys.executable, "-m", "collector.cli", "serve", "--database-url", database_url,
               "--host", "127.0.0.1", "--http-port", "0", "--grpc-port", "0", *flags]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, env=os.environ.copy())
    log: list[str] = []
    ports: list[int] = []
    ready = threading.Event()

    def pump() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            if len(log) < 5000:
                log.append(line)
            match = READY.search(line)
            if match:
                ports.extend(int(g) for g in match.groups())
                ready.set()
        ready.set()

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + timeout
        while not ready.wait(0.1) and time.monotonic() < deadline:
            pass
        if not ports:
            raise RuntimeError("the server did not start:\n" + "".join(log[-40:]))
        yield ServerProcess(process, ports[0], ports[1], log)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        thread.join(5)
