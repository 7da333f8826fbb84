"""Run the real `tooltrail serve` / `tooltrail worker` as subprocesses on loopback ports chosen
by the OS (for benchmarks and tests)."""

from __future__ import annotations

import contextlib
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

READY = re.compile(r"tooltrail listening: http=127\.0\.0\.1:(\d+) grpc=127\.0\.0\.1:(\d+)")


@dataclass
class ServerProcess:
    """A running server: its process, its ports, and its log so far."""

    process: subprocess.Popen[str]
    http_port: int
    grpc_port: int
    log: list[str] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def grpc_endpoint(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"


def _stop(process: subprocess.Popen[str] | subprocess.Popen[bytes], timeout: float = 30) -> None:
    """SIGTERM, SIGKILL after `timeout`; then SIGKILL whatever is left of its process group
    (children orphaned by a kill would otherwise outlive the run and hold its pipes open).

    The group is killed while the leader is an unreaped zombie, so its id cannot have been
    reused by another process group; a process someone else already reaped is left alone."""
    if process.returncode is not None:
        return
    pid = process.pid
    if not _exited(pid):
        process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while not _exited(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not _exited(pid):
            process.kill()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)  # its own session: see serve / workers
    process.wait()


def _exited(pid: int) -> bool:
    """True once the child has exited, without reaping it."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None
    except ChildProcessError:
        return True


@contextmanager
def serve(database_url: str, *flags: str, env: dict[str, str] | None = None,
          timeout: float = 60.0, python: str | None = None,
          program: str | None = None, cwd: str | None = None) -> Iterator[ServerProcess]:
    """Start `tooltrail serve` on 127.0.0.1 ports 0; stop it (SIGTERM) afterwards (`python`:
    the interpreter of another tooltrail install to run instead of this one; `program`: a
    `tooltrail` console script to run instead, `cwd` the directory it runs in)."""
    start = [program] if program else [python or sys.executable, "-m", "tooltrail"]
    command = [*start, "serve", "--host", "127.0.0.1",
               "--database-url", database_url, "--http-port", "0", "--grpc-port", "0", *flags]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, env={**os.environ, **(env or {})},
                               start_new_session=True, cwd=cwd)
    log: list[str] = []
    ports: list[int] = []
    ready = threading.Event()

    def pump() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            if len(log) < 5000:  # bounded: a long benchmark must not grow it without end
                log.append(line)
            match = READY.search(line)
            if match:
                ports.extend(int(g) for g in match.groups())
                ready.set()
        ready.set()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        if not ready.wait(timeout) or not ports:
            raise RuntimeError("tooltrail serve did not start:\n" + "".join(log))
        yield ServerProcess(process, ports[0], ports[1], log)
    finally:
        _stop(process)
        reader.join(5)
        if process.stderr is not None and not reader.is_alive():
            process.stderr.close()  # (closing it under a blocked reader would wait for the read)


@contextmanager
def workers(database_url: str, count: int, *flags: str) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Start `count` `tooltrail worker` processes; stop them (SIGTERM) afterwards."""
    command = [sys.executable, "-m", "tooltrail", "worker", "--database-url", database_url,
               *flags]
    processes = [subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)
                 for _ in range(count)]
    try:
        yield processes
    finally:
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            _stop(process)
