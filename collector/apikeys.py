"""Optional API keys: `role:key` entries (a bare key is `admin`), compared in constant time.

Roles: `ingest` (OTLP export only), `read` (GET /api/v1…, stateless /score and validate),
`admin` (everything). Keys are never logged.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROLES = {
    "ingest": frozenset({"ingest"}),
    "read": frozenset({"read"}),
    "admin": frozenset({"ingest", "read", "write"}),
}


class Unauthenticated(Exception):
    """No key, or a key that is not configured (401 / UNAUTHENTICATED)."""


class Forbidden(Exception):
    """A valid key whose role does not allow this (403 / PERMISSION_DENIED)."""


@dataclass(frozen=True)
class ApiKeys:
    """The configured keys; when there are none, everything is allowed."""

    keys: tuple[tuple[bytes, frozenset[str]], ...] = ()

    @classmethod
    def parse(cls, entries: Iterable[str], file: str | None = None) -> ApiKeys:
        """Keys from settings entries and an optional file (one entry a line, # comments)."""
        lines = list(entries)
        if file:
            lines += [ln.strip() for ln in Path(file).read_text(encoding="utf-8").splitlines()]
        keys = []
        for raw in lines:
            entry = raw.strip()
            if not entry or entry.startswith("#"):
                continue
            role, sep, key = entry.partition(":")
            if not sep or role not in ROLES:
                role, key = "admin", entry
            if not key:
                raise ValueError("an API key entry has an empty key")
            keys.append((key.encode(), ROLES[role]))
        return cls(tuple(keys))

    @property
    def enabled(self) -> bool:
        """True when keys are configured (and so required)."""
        return bool(self.keys)

    def check(self, authorization: str | None, need: str) -> None:
        """Allow, or raise Unauthenticated / Forbidden. `authorization` is `Bearer <key>`."""
        if not self.keys:
            return
        if not authorization:
            raise Unauthenticated("an API key is required: send 'Authorization: Bearer <key>'")
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthenticated("the Authorization header must be 'Bearer <key>'")
        given = token.strip().encode()
        allowed: frozenset[str] | None = None
        for key, permissions in self.keys:  # no early exit: the time does not depend on which
            if hmac.compare_digest(key, given):
                allowed = permissions
        if allowed is None:
            raise Unauthenticated("the API key is not valid")
        if need not in allowed:
            raise Forbidden(f"this API key may not {need}")
