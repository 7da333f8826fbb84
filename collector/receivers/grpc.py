"""OTLP/gRPC receiver: the TraceService, LogsService and MetricsService Export methods."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from types import TracebackType
from typing import Any

import grpc
from google.protobuf import duration_pb2
from google.protobuf.message import Message
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from tooltrail.collector.errors import InvalidPayload, Overloaded, PayloadTooLarge
from tooltrail.collector.ingest import Ingest, admitted
from tooltrail.collector.listen import PortInUse
from tooltrail.collector.receivers.codec import PROTOBUF, SIGNALS, response_for

log = logging.getLogger(__name__)
TRANSPORT = "grpc"
SERVICES = {  # signal -> the OTLP service that exports it
    "traces": "opentelemetry.proto.collector.trace.v1.TraceService",
    "logs": "opentelemetry.proto.collector.logs.v1.LogsService",
    "metrics": "opentelemetry.proto.collector.metrics.v1.MetricsService",
}
MAX_STREAMS_PER_CONNECTION = 16


def abort_status(exc: Exception) -> grpc.Status:
    """The one mapping from our errors to gRPC status (with RetryInfo when retrying helps)."""
    if isinstance(exc, Overloaded):
        retry = error_details_pb2.RetryInfo()
        seconds = max(1, math.ceil(exc.retry_after))
        retry.retry_delay.CopyFrom(duration_pb2.Duration(seconds=seconds))
        status = status_pb2.Status(code=code_pb2.UNAVAILABLE, message=str(exc))
        status.details.add().Pack(retry)
        return rpc_status.to_status(status)
    too_large = isinstance(exc, PayloadTooLarge)
    code = code_pb2.RESOURCE_EXHAUSTED if too_large else code_pb2.INVALID_ARGUMENT
    return rpc_status.to_status(status_pb2.Status(code=code, message=str(exc)))


class ExportService:
    """One signal's Export: it decodes the request itself (so an undecodable body is
    INVALID_ARGUMENT, not INTERNAL), hands it to ingest and answers as OTLP says."""

    def __init__(self, ingest: Ingest, signal: str) -> None:
        self.ingest = ingest
        self.signal = signal

    async def export(self, body: bytes, context: grpc.aio.ServicerContext) -> Message:
        try:
            try:
                with admitted(self.ingest, len(body)) as ticket:
                    result = await self.ingest.export(body, PROTOBUF, None, TRANSPORT, ticket,
                                                      self.signal)
            except (InvalidPayload, Overloaded):
                raise
            except Exception as exc:  # boundary: a clear answer, never INTERNAL/UNKNOWN
                log.exception("unexpected failure while ingesting a gRPC request")
                self.ingest.metrics.loop_errors.labels("grpc_export").inc()
                raise InvalidPayload(f"could not process the request: {type(exc).__name__}") \
                    from exc
        except (InvalidPayload, Overloaded) as exc:
            self.ingest.reject_request(TRANSPORT, exc)
            status = abort_status(exc)
            await context.abort(status.code, status.details, status.trailing_metadata)
            raise  # unreachable: abort raises
        return response_for(result, self.signal)

    def handler(self) -> grpc.GenericRpcHandler:
        """The generic handler that serves <Signal>Service/Export with raw request bytes."""
        method = grpc.unary_unary_rpc_method_handler(
            self.export,
            request_deserializer=None,
            response_serializer=SIGNALS[self.signal].response.SerializeToString,
        )
        return grpc.method_handlers_generic_handler(SERVICES[self.signal], {"Export": method})


class GrpcReceiver:
    """The gRPC server as an async context manager; `port` is the bound port after start."""

    def __init__(
        self,
        ingest: Ingest,
        host: str,
        port: int,
        max_message_bytes: int,
        interceptors: Sequence[Any] = (),
    ) -> None:
        self.ingest = ingest
        self.interceptors = tuple(interceptors)
        self.host = host
        self.port = port
        self.max_message_bytes = max_message_bytes
        self._server: grpc.aio.Server | None = None

    def bind(self) -> None:
        """Create the server and bind its port (in the running event loop, before serving);
        raises PortInUse when the address is taken. `__aenter__` binds if this was not called."""
        server = grpc.aio.server(
            interceptors=self.interceptors,
            options=[
                ("grpc.max_receive_message_length", self.max_message_bytes),
                # HTTP/2 flow control bounds what a client can have in flight per connection:
                # the bodies received but not yet answered stay few, whatever the load
                ("grpc.max_concurrent_streams", MAX_STREAMS_PER_CONNECTION),
                ("grpc.max_send_message_length", 16 * 1024 * 1024),
                # gRPC sets SO_REUSEPORT by default: a second server would then share the port
                # and the kernel would split clients (and spans) between the two
                ("grpc.so_reuseport", 0),
            ],
        )
        server.add_generic_rpc_handlers(
            tuple(ExportService(self.ingest, signal).handler() for signal in SERVICES))
        host = f"[{self.host}]" if ":" in self.host else self.host
        reason = "the address is in use or not available"
        try:
            port = server.add_insecure_port(f"{host}:{self.port}")
        except RuntimeError as exc:  # grpcio raises on a failed bind (older versions gave 0)
            raise PortInUse("OTLP/gRPC", "--grpc-port", self.host, self.port, reason) from exc
        if port == 0:
            raise PortInUse("OTLP/gRPC", "--grpc-port", self.host, self.port, reason)
        self.port = port
        self._server = server

    async def __aenter__(self) -> GrpcReceiver:
        if self._server is None:
            self.bind()
        assert self._server is not None
        await self._server.start()
        log.info("OTLP/gRPC listening on %s:%d", self.host, self.port)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop accepting, let in-flight exports finish (up to 5 s). Safe if never started."""
        if self._server is not None:
            await self._server.stop(grace=5)
            self._server = None
