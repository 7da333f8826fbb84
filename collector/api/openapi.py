"""The OpenAPI document as the API answers, and Swagger UI served from the package.

Everything here works on the app, never on a route, so that routes added by any router,
now or later, are described the same way:

- operationIds are the route functions' names (`operation_id`, the app's
  `generate_unique_id_function`);
- a 422 is documented as the one error shape the server answers (`errors.install`), not
  FastAPI's `{detail: [...]}`;
- the bearer scheme, and on each operation the roles whose key it needs, come from the
  middleware's own `permission_for`, with the 401 / 403 answers it gives;
- `/docs` loads Swagger UI from the `swagger_ui_bundle` package's files under
  `/docs/assets`, so it works offline.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import swagger_ui_bundle  # type: ignore[import-untyped]
from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.staticfiles import StaticFiles

from tooltrail.collector.api.auth import permission_for
from tooltrail.collector.api.schemas import ErrorBody, InvalidRequestBody
from tooltrail.collector.apikeys import ROLES

DOCS = "/docs"
ASSETS = "/docs/assets"
BEARER = "bearer"
METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
FASTAPI_VALIDATION = ("HTTPValidationError", "ValidationError")  # replaced by InvalidRequestBody


def operation_id(route: APIRoute) -> str:
    """A route's operationId: its function's name (`list_conversations`)."""
    return route.name


def install(app: FastAPI) -> None:
    """Describe the app's routes as they answer, and serve Swagger UI locally. The app must
    be created with `docs_url=None`, `redoc_url=None` and `generate_unique_id_function=
    operation_id` (FastAPI reads those at construction)."""
    generate = app.openapi  # FastAPI's generator; it caches its document on the app

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = describe(generate())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    serve_docs(app)


def describe(doc: dict[str, Any]) -> dict[str, Any]:
    """FastAPI's document with the error answers and security the server actually has."""
    components = doc.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    for name in FASTAPI_VALIDATION:
        schemas.pop(name, None)
    error = _component(schemas, ErrorBody)
    invalid = _component(schemas, InvalidRequestBody)
    components["securitySchemes"] = {
        BEARER: {
            "type": "http",
            "scheme": "bearer",
            "description": "an API key (`TOOLTRAIL_API_KEYS`), needed when keys are "
            "configured; each operation lists the roles whose key it accepts",
        }
    }
    for path, item in doc.get("paths", {}).items():
        for method in METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            responses = operation.setdefault("responses", {})
            if "422" in responses:
                responses["422"] = _answer("the request does not match this document", invalid)
            need = permission_for(method.upper(), path)
            if need is None:
                continue
            operation["security"] = [{BEARER: [role]} for role, can in ROLES.items() if need in can]
            responses.setdefault("401", _answer("no API key, or one that is not configured", error))
            responses.setdefault("403", _answer("the key's role does not allow this", error))
    return doc


def _component(schemas: dict[str, Any], model: type[BaseModel]) -> dict[str, str]:
    """Add a model (and the models it uses) to the components; a reference to it."""
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
    schemas.update(schema.pop("$defs", {}))
    schemas[model.__name__] = schema
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def _answer(description: str, schema: dict[str, str]) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def serve_docs(app: FastAPI) -> None:
    """`/docs`: Swagger UI whose page, scripts and styles all come from this server."""
    assets = Path(str(swagger_ui_bundle.swagger_ui_path))
    app.mount(ASSETS, StaticFiles(directory=assets), name="swagger-ui")
    redirect = f"{DOCS}/oauth2-redirect"

    @app.get(DOCS, include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} API",
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon-32x32.png",
            oauth2_redirect_url=redirect,
        )

    @app.get(redirect, include_in_schema=False)
    def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()
