"""Database outage: a PostgreSQL server the test starts itself (initdb into a temporary
directory, a free loopback port) is stopped mid-load and started again. Meanwhile the
receivers answer retryable errors (503 / UNAVAILABLE with a retry hint); afterwards they
recover by themselves; nothing acknowledged is lost."""

from __future__ import annotations

import asyncio
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server import running_server
from tooltrail.collector.bench.ingest import missing_acknowledged
from tooltrail.collector.bench.load import GrpcSender, HttpSender, Send, Stats, run_clients
from tooltrail.collector.bench.traffic import RequestFactory, Shape
from tooltrail.collector.store.db import make_engine, migrate


def _bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}")) or (
        [shutil.which(name)] if shutil.which(name) else [])
    if not found or found[-1] is None:
        pytest.skip(f"PostgreSQL server binaries ({name}) are not installed")
    return str(found[-1])


def _as_postgres(command: list[str]) -> list[str]:
    """initdb and postgres refuse to run as root: run them as the postgres user then."""
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *command]
    return command


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class PostgresServer:
    """A throwaway PostgreSQL cluster on 127.0.0.1:`port`."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="tooltrail-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        os.chmod(self.root, 0o777)
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
        subprocess.run(_as_postgres([_bin("initdb"), "-D", str(self.data), "-A", "trust",
                                     "-U", "postgres", "--no-sync"]),
                       check=True, capture_output=True)

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        options = (f"-c listen_addresses=127.0.0.1 -p {self.port} -c fsync=off "
                   f"-c unix_socket_directories={self.root}")
        subprocess.run(_as_postgres([_bin("pg_ctl"), "-D", str(self.data), "-o", options,
                                     "-l", str(self.root / "log"), "-w", "-t", "30", "start"]),
                       check=True, capture_output=True)

    def stop(self) -> None:
        subprocess.run(_as_postgres([_bin("pg_ctl"), "-D", str(self.data), "-m", "fast", "-w",
                                     "-t", "30", "stop"]), check=False, capture_output=True)

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def postgres() -> Iterator[PostgresServer]:
    server = PostgresServer()
    try:
        server.start()
        yield server
    finally:
        server.remove()


@pytest.mark.slow
@pytest.mark.postgres
def test_database_outage_gives_retryable_answers_and_recovers(postgres: PostgresServer) -> None:
    migrate(postgres.url)
    factory = RequestFactory(Shape(spans=100))
    result: list[Stats] = []
    marks: dict[str, float] = {}

    with running_server(postgres.url, "--store-retry-seconds", "0.5") as server:
        async def load() -> None:
            senders = [GrpcSender(server.grpc_endpoint, timeout=10),
                       HttpSender(server.base_url, timeout=10),
                       GrpcSender(server.grpc_endpoint, timeout=10),
                       HttpSender(server.base_url, timeout=10)]
            sends: list[Send] = list(senders)
            try:
                result.append(await run_clients(sends, factory, seconds=14.0,
                                                max_requests=50_000, grace=30.0))
            finally:
                for s in senders:
                    await s.close()

        thread = threading.Thread(target=lambda: asyncio.run(load()), daemon=True)
        thread.start()
        time.sleep(3.0)
        postgres.stop()
        marks["stopped"] = time.perf_counter()
        time.sleep(4.0)
        postgres.start()
        marks["started"] = time.perf_counter()
        thread.join(60)
        assert server.process.poll() is None, "the server died"
        with server.client() as client:
            assert client.get("/readyz").status_code == 200
    (stats,) = result
    engine = make_engine(postgres.url)
    missing = missing_acknowledged(engine, factory, stats)
    engine.dispose()
    print(f"\noutage: acknowledged {stats.acked_requests}/{stats.sent} requests, retryable "
          f"answers {stats.retryable}, refused {stats.refused}, transport errors "
          f"{stats.transport_errors}, missing {missing}, messages {stats.messages}")
    assert stats.retryable > 0, "no retryable answer while the database was down"
    assert stats.refused == 0, stats.messages
    assert stats.last_ack > marks["started"], "ingest did not recover"
    assert stats.acked_requests == stats.sent, stats.messages
    assert missing == 0
