"""Errors that say whether a retry can help. Each transport maps them in one function."""

from __future__ import annotations


class TooltrailError(Exception):
    """Base class of the service's own errors."""


class InvalidPayload(TooltrailError):
    """The request can never succeed as sent (400 / INVALID_ARGUMENT). Not retryable."""


class PayloadTooLarge(InvalidPayload):
    """The request exceeds the size limit (413 / RESOURCE_EXHAUSTED). Not retryable."""


class UnsupportedMediaType(InvalidPayload):
    """The content type is not OTLP protobuf or JSON (415)."""


class Overloaded(TooltrailError):
    """The service cannot take this now; retry later (503 / UNAVAILABLE with a retry hint)."""

    def __init__(self, message: str, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class StoreUnavailable(Overloaded):
    """The database did not accept the write; retryable."""
