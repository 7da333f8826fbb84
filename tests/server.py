"""The real `tooltrail serve` / `tooltrail worker` for tests, with polling helpers."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from tooltrail.collector.bench.process import ServerProcess, serve, workers

FAST = ("--settle-seconds", "0.3", "--worker-poll-seconds", "0.1")


@dataclass
class Server(ServerProcess):
    """A running server with an HTTP client and a polling helper."""

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
    """`tooltrail serve` on OS-chosen loopback ports with a short settle time."""
    with serve(database_url, *FAST, *extra, env=env, timeout=timeout) as running:
        yield Server(running.process, running.http_port, running.grpc_port, running.log)


@contextmanager
def running_workers(
    database_url: str, count: int, *extra: str
) -> Iterator[list[subprocess.Popen[bytes]]]:
    """`count` standalone workers with a short settle time."""
    with workers(database_url, count, *FAST, *extra) as processes:
        yield processes
