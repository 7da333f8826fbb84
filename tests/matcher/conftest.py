"""Matcher tests: keep hypothesis's files out of the working tree."""

from __future__ import annotations

import os
import tempfile

from hypothesis import configuration

configuration.set_hypothesis_home_dir(os.path.join(tempfile.gettempdir(), "tooltrail-hypothesis"))


def _record_parses(path: str) -> None:
    """Append every expectation the parser sees, with its verdict, to `path` (JSON lines):
    the corpus tests/collector/api/test_expectation_schema.py checks the JSON Schema against."""
    import atexit
    import json
    from typing import Any

    from tooltrail.matcher import InvalidExpectation, spec

    parse = spec._parse
    out = open(path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 (open for the session)
    atexit.register(out.close)

    def write(data: Any, require_id: bool, error: InvalidExpectation | None) -> None:
        try:
            body = json.dumps(data, allow_nan=False)
            if json.loads(body) != data:  # a tuple, a non-string key: not what JSON sends
                return
        except (TypeError, ValueError, RecursionError):  # not a JSON body (a set, NaN, …)
            return
        verdict = None if error is None else {"path": error.path, "message": error.message}
        out.write(json.dumps({"body": body, "require_id": require_id, "error": verdict}) + "\n")

    def recording(data: Any, require_id: bool) -> spec.Expectation:
        try:
            expectation = parse(data, require_id)
        except InvalidExpectation as exc:
            write(data, require_id, exc)
            raise
        write(data, require_id, None)
        return expectation

    spec._parse = recording


if os.environ.get("TOOLTRAIL_EXPECTATION_CORPUS"):
    _record_parses(os.environ["TOOLTRAIL_EXPECTATION_CORPUS"])
