"""Expectation request bodies: JSON or YAML (docs/matching.md: YAML is the same shape)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import yaml
from fastapi import Depends, Request

from tooltrail.collector.api.errors import ApiError

JSON_TYPES = ("application/json", "")
YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml")


async def expectation_body(request: Request) -> dict[str, Any]:
    """The body as an object, parsed by its Content-Type (JSON when none is given)."""
    media = (request.headers.get("content-type") or "").split(";", 1)[0].strip().lower()
    raw = await request.body()
    try:
        if media in YAML_TYPES:
            value = yaml.safe_load(raw)
        elif media in JSON_TYPES or media.endswith("+json"):
            value = json.loads(raw)
        else:
            raise ApiError(415, f"unsupported content type {media!r}: send application/json "
                                "or application/yaml")
    except (ValueError, yaml.YAMLError, RecursionError) as exc:
        kind = "YAML" if media in YAML_TYPES else "JSON"
        raise _invalid(f"the body is not valid {kind}: {exc}"[:500]) from exc
    if not isinstance(value, dict):
        raise _invalid("the body must be an object (an expectation)")
    return value


def _invalid(message: str) -> ApiError:
    """A 422 in the documented shape (InvalidRequestBody): the whole body is the bad field."""
    return ApiError(422, message, [{"path": "", "message": message}])


ExpectationBody = Annotated[dict[str, Any], Depends(expectation_body)]
