"""The one error shape of the REST API: {"error": {"code", "message", "details"?}}."""

from __future__ import annotations

import logging
import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import SQLAlchemyError
from starlette.exceptions import HTTPException

from tooltrail.collector.errors import Overloaded
from tooltrail.collector.store.writer import classify

log = logging.getLogger(__name__)

CODES = {
    400: "bad_request",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media",
    422: "invalid_request",
    500: "internal",
    503: "unavailable",
}


class ApiError(Exception):
    """An error answered with `status` in the one shape."""

    def __init__(self, status: int, message: str, details: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.details = details


def error_body(status: int, message: str, details: Any = None) -> dict[str, Any]:
    """The JSON body of an error answer."""
    error: dict[str, Any] = {"code": CODES.get(status, "error"), "message": message}
    if details is not None:
        error["details"] = details
    return {"error": error}


def install(app: FastAPI) -> None:
    """Route every error through the one shape (no stack traces leak)."""

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(error_body(exc.status, exc.message, exc.details), exc.status)

    @app.exception_handler(HTTPException)
    async def _http_error(_: Request, exc: HTTPException) -> JSONResponse:
        return JSONResponse(
            error_body(exc.status_code, str(exc.detail)),
            exc.status_code,
            headers=getattr(exc, "headers", None),
        )

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        details = [
            {
                "path": ".".join(str(p) for p in e.get("loc", ()) if p != "body"),
                "message": e.get("msg", ""),
            }
            for e in exc.errors()
        ]
        first = details[0] if details else {"path": "", "message": "invalid request"}
        message = f"{first['path']}: {first['message']}" if first["path"] else first["message"]
        return JSONResponse(error_body(422, message, details), 422)

    @app.exception_handler(SQLAlchemyError)
    async def _store_error(request: Request, exc: SQLAlchemyError) -> JSONResponse:
        """The store's failures, classified as ingest classifies them: a retryable 503 with
        Retry-After when the same request can succeed later (database down, connection lost,
        locked), else a 500."""
        error = classify(exc)
        if not isinstance(error, Overloaded):
            log.error("the store failed a request: %s", exc)
            return JSONResponse(error_body(500, "internal error"), 500)
        settings = getattr(getattr(request.app.state, "tooltrail", None), "settings", None)
        retry_after = getattr(settings, "store_retry_seconds", error.retry_after)
        log.warning("the store is unavailable for %s: %s", request.url.path, exc)
        return JSONResponse(error_body(503, str(error)), 503,
                            headers={"Retry-After": str(max(1, math.ceil(retry_after)))})

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        return JSONResponse(error_body(500, "internal error"), 500)
