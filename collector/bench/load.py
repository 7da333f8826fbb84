"""Load clients for the ingest benchmark and the durability tests: OTLP/gRPC and OTLP/HTTP
senders of pre-built requests, closed-loop (as fast as acknowledged) or paced (a fixed offered
rate), retrying retryable answers as the OTLP exporters do, and an acknowledgement log.

Every loop is bounded in count and in time, and every target is on loopback.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import grpc
import httpx
from google.rpc import error_details_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from tooltrail.collector.bench.traffic import RequestFactory
from tooltrail.collector.tasks import cancel

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


class Retryable(Exception):
    """The server answered "retry later" (UNAVAILABLE / 503 / 429), with its hint."""

    def __init__(self, delay: float, message: str) -> None:
        super().__init__(message)
        self.delay = delay


class Refused(Exception):
    """The server refused the request for good (any other non-OK answer)."""


@dataclass
class Stats:
    """What one run of clients saw."""

    sent: int = 0
    acked_requests: int = 0
    acked_spans: int = 0
    retryable: int = 0
    refused: int = 0
    transport_errors: int = 0
    latencies: list[float] = field(default_factory=list)  # seconds, send → ack (last attempt)
    acked_markers: list[bytes] = field(default_factory=list)
    started: float = 0.0
    finished: float = 0.0
    messages: dict[str, int] = field(default_factory=dict)
    last_group: int | None = None  # conversation group of the last acknowledged request
    last_ack: float = 0.0  # perf_counter() of the last acknowledgement

    @property
    def seconds(self) -> float:
        """Wall time of the run."""
        return max(1e-9, self.finished - self.started)

    @property
    def spans_per_second(self) -> float:
        """Acknowledged (= committed) spans per second."""
        return self.acked_spans / self.seconds

    def percentile(self, q: float) -> float:
        """Latency percentile `q` (0–100) in seconds; 0 when nothing was acknowledged."""
        if not self.latencies:
            return 0.0
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]

    def note(self, message: str) -> None:
        """Count a distinct error message (bounded)."""
        key = message[:120]
        if key in self.messages or len(self.messages) < 20:
            self.messages[key] = self.messages.get(key, 0) + 1


Send = Callable[[bytes], Awaitable[None]]


def _check_loopback(host: str) -> None:
    if host not in LOOPBACK and not host.startswith("127."):
        raise ValueError(f"load is only ever sent to loopback, not {host!r}")


class GrpcSender:
    """Sends serialised requests over one gRPC channel."""

    def __init__(self, endpoint: str, timeout: float = 30.0) -> None:
        _check_loopback(endpoint.rsplit(":", 1)[0])
        self.channel = grpc.aio.insecure_channel(endpoint, options=[
            ("grpc.max_send_message_length", 128 * 1024 * 1024),
            ("grpc.max_receive_message_length", 16 * 1024 * 1024),
        ])
        self.call = self.channel.unary_unary(
            EXPORT, request_serializer=None,
            response_deserializer=ExportTraceServiceResponse.FromString,
        )
        self.timeout = timeout

    async def __call__(self, body: bytes) -> None:
        try:
            await self.call(body, timeout=self.timeout)
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.UNAVAILABLE:
                raise Retryable(_grpc_retry_delay(exc), exc.details() or "UNAVAILABLE") from exc
            raise Refused(f"{exc.code().name}: {exc.details()}") from exc

    async def close(self) -> None:
        """Close the channel."""
        await self.channel.close()


def _grpc_retry_delay(exc: grpc.aio.AioRpcError) -> float:
    for key, value in exc.trailing_metadata() or ():
        if key == "grpc-status-details-bin" and isinstance(value, bytes):
            status = status_pb2.Status.FromString(value)
            for detail in status.details:
                info = error_details_pb2.RetryInfo()
                if detail.Unpack(info):
                    return float(info.retry_delay.seconds + info.retry_delay.nanos / 1e9)
    return 1.0


class HttpSender:
    """POSTs serialised requests to /v1/traces over one keep-alive connection. With `logs` (a
    traces body → the logs request that goes with it), each request is sent with its logs
    request to /v1/logs, logs first every other time (either may arrive first), and is
    acknowledged when both are."""

    def __init__(self, base_url: str, timeout: float = 30.0, connections: int = 1,
                 logs: Callable[[bytes], bytes] | None = None) -> None:
        _check_loopback(httpx.URL(base_url).host)
        self.client = httpx.AsyncClient(
            base_url=base_url, timeout=httpx.Timeout(timeout, pool=None),
            limits=httpx.Limits(max_connections=connections,
                                max_keepalive_connections=connections),
        )
        self.logs = logs
        self.sent = 0

    async def __call__(self, body: bytes) -> None:
        if self.logs is None:
            await self.post("/v1/traces", body)
            return
        self.sent += 1
        parts = [("/v1/traces", body), ("/v1/logs", self.logs(body))]
        for path, part in parts if self.sent % 2 else reversed(parts):
            await self.post(path, part)  # a retry resends both: ingest is idempotent

    async def post(self, path: str, body: bytes) -> None:
        """One POST; raises Retryable or Refused unless it is acknowledged."""
        response = await self.client.post(
            path, content=body, headers={"content-type": "application/x-protobuf"}
        )
        if response.status_code == 200:
            return
        if response.status_code in (429, 502, 503, 504):
            hint = response.headers.get("retry-after", "1")
            delay = float(hint) if hint.replace(".", "", 1).isdigit() else 1.0
            raise Retryable(delay, f"HTTP {response.status_code}")
        raise Refused(f"HTTP {response.status_code}: {response.content[:200]!r}")

    async def close(self) -> None:
        """Close the connection."""
        await self.client.aclose()


async def send_with_retries(
    send: Send, body: bytes, stats: Stats, deadline: float, max_attempts: int = 20
) -> bool:
    """Send until acknowledged, refused, out of attempts or past `deadline` (monotonic).
    Retryable answers wait the server's hint (at most 5 s), as the OTLP exporters do."""
    for _ in range(max_attempts):
        started = time.perf_counter()
        try:
            await send(body)
        except Retryable as exc:
            stats.retryable += 1
            stats.note(str(exc))
            delay = min(max(exc.delay, 0.05), 5.0)
            if time.monotonic() + delay > deadline:
                return False
            await asyncio.sleep(delay)
            continue
        except Refused as exc:
            stats.refused += 1
            stats.note(str(exc))
            return False
        except (grpc.aio.AioRpcError, httpx.HTTPError, OSError) as exc:
            stats.transport_errors += 1
            stats.note(f"{type(exc).__name__}: {exc}")
            if time.monotonic() + 0.2 > deadline:
                return False
            await asyncio.sleep(0.2)
            continue
        stats.latencies.append(time.perf_counter() - started)
        return True
    return False


async def run_open_loop(
    senders: list[Send],
    factory: RequestFactory,
    *,
    rate: float,
    seconds: float,
    max_requests: int = 1_000_000,
    max_inflight: int = 512,
    grace: float = 60.0,
    conversation_every: int = 1,
) -> Stats:
    """Offer `rate` requests/s for `seconds` whatever the answers (open loop): each request is
    its own task (at most `max_inflight` at once), spread over `senders`, retried on retryable
    answers until `grace` seconds after the end."""
    stats = Stats()
    stats.started = time.perf_counter()
    stop_at = time.monotonic() + seconds
    hard_deadline = stop_at + grace
    slots = asyncio.Semaphore(max_inflight)
    tasks: set[asyncio.Task[None]] = set()

    async def one(send: Send, body: bytes, marker: bytes, group: int) -> None:
        try:
            if await send_with_retries(send, body, stats, hard_deadline):
                stats.acked_requests += 1
                stats.acked_spans += factory.span_count
                stats.acked_markers.append(marker)
                stats.last_group, stats.last_ack = group, time.perf_counter()
        finally:
            slots.release()

    interval = 1.0 / rate
    next_at = time.monotonic()
    n = 0
    group = 0
    while time.monotonic() < stop_at and n < max_requests:
        await slots.acquire()
        if n % conversation_every == 0:
            group = n
        body, marker = factory.make(group)
        stats.sent += 1
        task = asyncio.create_task(one(senders[n % len(senders)], body, marker, group))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        n += 1
        next_at += interval
        await asyncio.sleep(max(0.0, next_at - time.monotonic()))
    if tasks:
        await asyncio.gather(*tasks)
    stats.finished = time.perf_counter()
    return stats


async def run_clients(
    senders: list[Send],
    factory: RequestFactory,
    *,
    seconds: float,
    max_requests: int,
    rate: float | None = None,
    retry: bool = True,
    grace: float = 30.0,
    conversation_every: int = 1,
) -> Stats:
    """Drive `senders` (one client each) for `seconds` or `max_requests` requests, whichever
    comes first. Closed-loop when `rate` is None (each client sends its next request when the
    last is answered); else paced at `rate` requests/s in total (open loop). Retries may run
    `grace` seconds past the end. `conversation_every` consecutive requests of a client
    continue the same conversations (1: each request holds whole conversations of its own, as
    the benchmark traffic is defined)."""
    stats = Stats()
    stats.started = time.perf_counter()
    stop_at = time.monotonic() + seconds
    hard_deadline = stop_at + grace
    budget = [max_requests]
    tickets: asyncio.Queue[None] | None = asyncio.Queue() if rate else None

    async def client(index: int, send: Send) -> None:
        group = 0
        n = 0
        while time.monotonic() < stop_at and budget[0] > 0:
            if tickets is not None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(tickets.get(), max(0.0, stop_at - time.monotonic()))
                if time.monotonic() >= stop_at:
                    break
            if budget[0] <= 0:
                break
            budget[0] -= 1
            if n % conversation_every == 0:
                group = index * 1_000_000 + n
            n += 1
            body, marker = factory.make(group)
            stats.sent += 1
            if retry:
                ok = await send_with_retries(send, body, stats, hard_deadline)
            else:
                ok = await send_with_retries(send, body, stats, hard_deadline, max_attempts=1)
            if ok:
                stats.acked_requests += 1
                stats.acked_spans += factory.span_count
                stats.acked_markers.append(marker)
                stats.last_group, stats.last_ack = group, time.perf_counter()

    async def pacer() -> None:
        assert tickets is not None and rate
        interval = 1.0 / rate
        next_at = time.monotonic()
        while time.monotonic() < stop_at:
            tickets.put_nowait(None)
            next_at += interval
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))

    tasks = [asyncio.create_task(client(i, s)) for i, s in enumerate(senders)]
    pace = asyncio.create_task(pacer()) if rate else None
    await asyncio.gather(*tasks)
    await cancel(pace)
    stats.finished = time.perf_counter()
    return stats
