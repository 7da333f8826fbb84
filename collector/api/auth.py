"""API-key checks for both transports: an ASGI middleware and a gRPC interceptor."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
from google.rpc import code_pb2, status_pb2
from starlette.types import ASGIApp, Receive, Scope, Send

from tooltrail.collector.api.errors import error_body
from tooltrail.collector.api.routes.capture import is_capture_path
from tooltrail.collector.apikeys import ApiKeys, Forbidden, Unauthenticated
from tooltrail.collector.ui import session

OPEN_PATHS = ("/healthz", "/readyz", "/metrics", "/openapi.json", "/docs", "/redoc")
OTLP_PATHS = ("/v1/traces", "/v1/logs", "/v1/metrics")
STATELESS = ("/api/v1/score", "/api/v1/expectations:validate")


def permission_for(method: str, path: str) -> str | None:
    """What a request needs: `ingest`, `read`, `write`, or None for open paths."""
    if path in OTLP_PATHS or is_capture_path(method, path):
        return "ingest"
    if path.startswith("/api/"):
        if method in ("GET", "HEAD") or path in STATELESS:
            return "read"
        return "write"
    if path in OPEN_PATHS or path.startswith("/docs") or session.is_open(path):
        return None
    return "read"


class ApiKeyMiddleware:
    """Refuses requests without a key allowed to do what they ask (401 / 403)."""

    def __init__(self, app: ASGIApp, keys: ApiKeys) -> None:
        self.app = app
        self.keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.keys.enabled:
            await self.app(scope, receive, send)
            return
        need = permission_for(scope["method"], scope["path"])
        if need is not None:
            headers = dict(scope.get("headers") or [])
            header = headers.get(b"authorization", b"").decode("latin-1") or None
            page = session.is_page(scope["path"])
            if header is None and page:
                header = session.cookie_authorization(headers)
            try:
                self.keys.check(header, need)
            except (Unauthenticated, Forbidden) as exc:
                if page:  # a reader without a valid key gets the sign-in form, nothing else
                    await session.signin_redirect(send, scope["path"], scope["query_string"])
                    return
                status = 401 if isinstance(exc, Unauthenticated) else 403
                await _refuse(send, status, str(exc), otlp=need == "ingest")
                return
        await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, message: str, *, otlp: bool) -> None:
    if otlp:  # OTLP/HTTP answers carry a google.rpc.Status
        code = code_pb2.UNAUTHENTICATED if status == 401 else code_pb2.PERMISSION_DENIED
        body = status_pb2.Status(code=code, message=message).SerializeToString()
        content_type = b"application/x-protobuf"
    else:
        body = json.dumps(error_body(status, message)).encode()
        content_type = b"application/json"
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class ApiKeyInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """gRPC: the `authorization` metadata must carry an ingest key."""

    def __init__(self, keys: ApiKeys) -> None:
        self.keys = keys

    async def intercept_service(
        self, continuation: Callable[[Any], Awaitable[Any]], details: Any
    ) -> Any:
        if not self.keys.enabled:
            return await continuation(details)
        metadata = dict(details.invocation_metadata or ())
        try:
            self.keys.check(metadata.get("authorization"), "ingest")
        except (Unauthenticated, Forbidden) as exc:
            code = (
                grpc.StatusCode.UNAUTHENTICATED
                if isinstance(exc, Unauthenticated)
                else grpc.StatusCode.PERMISSION_DENIED
            )
            message = str(exc)

            async def refuse(_request: Any, context: Any) -> None:
                await context.abort(code, message)

            return grpc.unary_unary_rpc_method_handler(refuse)
        return await continuation(details)
