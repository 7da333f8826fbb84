"""Run the real `tooltrail serve` as a subprocess on OS-chosen loopback ports."""

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
from typing import Any

import httpx

READY = re.compile(r"tooltrail listening: http=127\.0\.0\.1:(\d+) grpc=127\.0\.0\.1:(\d+)")


@dataclass
class Server:
    """A running server: its ports, an HTTP client, and its log so far."""

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

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, timeout=10)

    def wait_for(
        self, path: str, predicate: Any, timeout: float = 20.0, params: Any = None
    ) -> Any:
        """Poll GET `path` until predicate(json) holds; returns that json."""
        deadline = time.monotonic() + timeout
        last: Any = None
        with self.client() as client:
            while time.monotonic() < deadline:
                response = client.get(path, params=params)
                if response.status_code == 200:
                    last = response.json()
                    if predicate(last):
                        return last
                time.sleep(0.1)
        raise AssertionError(f"timed out waiting on {path}; last answer: {last}\n"
                             + "".join(self.log[-30:]))


@contextmanager
def running_server(database_url: str, *extra: str, env: dict[str, str] | None = None,
                   timeout: float = 30.0) -> Iterator[Server]:
    """Start `tooltrail serve` on ports 0, wait until it says where it listens, stop it after."""
    command = [sys.executable, "-m", "collector.cli", "serve", "--database-url", database_url,
               "--http-port", "0", "--grpc-port", "0", "--settle-seconds", "0.3",
               "--worker-poll-seconds", "0.1", *extra]
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **(env or {})},
    )
    log: list[str] = []
    ports: list[int] = []
    ready = threading.Event()

    def pump() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            log.append(line)
            match = READY.search(line)
            if match:
                ports.extend(int(g) for g in match.groups())
                ready.set()
        ready.set()

    pump_thread = threading.Thread(target=pump, daemon=True)
    pump_thread.start()
    try:
        if not ready.wait(timeout) or not ports:
            raise RuntimeError("server did not start:\n" + "".join(log))
        yield Server(process, ports[0], ports[1], log)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        pump_thread.join(5)
        if process.stderr is not None:
            process.stderr.close()


@contextmanager
def running_workers(database_url: str, count: int, *extra: str) -> Iterator[list[Any]]:
    """Start `count` standalone `tooltrail worker` processes; SIGTERM (or reap) them after."""
    command = [sys.executable, "-m", "collector.cli", "worker", "--database-url", database_url,
               "--settle-seconds", "0.3", "--worker-poll-seconds", "0.1", *extra]
    processes = [subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for _ in range(count)]
    try:
        yield processes
    finally:
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
