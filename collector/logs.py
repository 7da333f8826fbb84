"""The one log format of every tooltrail process (server, uvicorn, workers, child processes):
text lines, or one JSON object a line for log shippers (`--log-format json`)."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """`{"time", "level", "logger", "message"}`, plus `exception` when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def setup(level: str, log_format: str = "text") -> None:
    """Log to stderr at `level` in `log_format` ("text" or "json"). Uvicorn's loggers are left
    unconfigured (log_config=None) so they reach this same handler."""
    handler = logging.StreamHandler(sys.stderr)
    json_lines = log_format == "json"
    handler.setFormatter(JsonFormatter() if json_lines else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level.upper(), handlers=[handler])
    # alembic announces its internal plugins at INFO when imported: noise to a user
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)
