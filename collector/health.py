"""Readiness, and the standalone worker's own small HTTP endpoint (/healthz, /readyz, /metrics).

The server answers the same three paths through FastAPI (`collector.api.routes.health`); both
ask `readiness` whether they are ready. The worker serves them from the standard library's HTTP
server in a thread: a worker process does not load the web stack.
"""

from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from sqlalchemy import Engine, text
from sqlalchemy.exc import SQLAlchemyError

from tooltrail.collector.listen import tcp_listener
from tooltrail.collector.store.db import at_head

log = logging.getLogger(__name__)


def readiness(engine: Engine) -> str | None:
    """None when the database is reachable and its schema at the newest migration; else why."""
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        if not at_head(engine):
            return "database schema is not at the newest migration; run migrate"
    except SQLAlchemyError as exc:
        return f"database unreachable: {exc.__class__.__name__}"
    return None


class HealthServer:
    """/healthz, /readyz and /metrics on `host:port` (0: any free), in a daemon thread."""

    def __init__(self, host: str, port: int, engine: Engine, registry: CollectorRegistry) -> None:
        engine_, registry_ = engine, registry

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/healthz":
                    self._answer(200, b'{"status":"ok"}', "application/json")
                elif path == "/readyz":
                    why = readiness(engine_)
                    if why is None:
                        self._answer(200, b'{"status":"ready"}', "application/json")
                    else:
                        self._answer(503, why.encode(), "text/plain; charset=utf-8")
                elif path == "/metrics":
                    self._answer(200, generate_latest(registry_), CONTENT_TYPE_LATEST)
                else:
                    self._answer(404, b"not found", "text/plain; charset=utf-8")

            def _answer(self, status: int, body: bytes, media: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", media)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                """Probes and scrapes are not logged (one line per probe is noise)."""

        # bound by the one listener helper: a taken port is PortInUse, as for `serve`
        listener = tcp_listener("the worker's health and metrics", "--worker-http-port",
                                host, port)
        self.server = ThreadingHTTPServer(listener.getsockname()[:2], Handler,
                                          bind_and_activate=False)
        self.server.socket.close()
        self.server.socket = listener
        self.server.daemon_threads = True
        self._thread = threading.Thread(
            target=self.server.serve_forever, name="tooltrail-worker-http", daemon=True
        )

    @property
    def port(self) -> int:
        return int(self.server.socket.getsockname()[1])

    def __enter__(self) -> HealthServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(5)
