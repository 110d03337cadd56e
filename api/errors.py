"""memctx's refusals as HTTP answers: bad input is a 422 naming the field, an unknown or another
tenant's conversation a 404, the same for both, and a pool with no free connection or a database
that is restarting or unreachable a 503 with Retry-After. Nothing here decides; it only translates.

Every error answer has one shape: `{"detail": "<what is wrong, one sentence>"}`, and a 422 about
named fields also lists them, `"errors": [{"loc": [...], "msg": "...", "type": "..."}]` (FastAPI's
own validation items). (The proxy's upstream failures keep OpenAI's `{"error": {...}}`, which
OpenAI clients read.)"""

from __future__ import annotations

import logging
import re
from typing import Any, NoReturn

import psycopg

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from psycopg_pool import PoolTimeout

from memctx.assemble import BudgetTooSmall
from memctx.models import InvalidInput
from memctx.store import UnknownConversation

log = logging.getLogger("memctx.api")


def field_error(loc: list[str | int], message: str) -> NoReturn:
    """A 422 naming the field, like FastAPI's own validation errors."""
    raise HTTPException(422, [{"loc": loc, "msg": message, "type": "value_error"}])


def fields_answer(errors: list[dict[str, Any]]) -> JSONResponse:
    """The 422 for invalid fields: a sentence naming each, and the items themselves."""
    items = [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]} for e in errors]
    said = "; ".join(f"{'.'.join(str(part) for part in e['loc'])}: {e['msg']}" for e in items)
    return JSONResponse({"detail": said, "errors": items}, status_code=422)


# The schema of a 422 in the OpenAPI document, as `fields_answer` writes it.
FIELDS_ERROR_SCHEMA = {
    "title": "HTTPValidationError", "type": "object", "required": ["detail"],
    "properties": {"detail": {"title": "Detail", "type": "string", "description": "what is wrong, naming each field"},
                   "errors": {"title": "Errors", "type": "array", "items": {"$ref": "#/components/schemas/ValidationError"}}},
}


# What a request meets while the database is down or busy: no connection free within
# MEMCTX_POOL_TIMEOUT_S, or one that broke under it (a restart's AdminShutdown, a lost server).
DATABASE_UNAVAILABLE = (PoolTimeout, psycopg.OperationalError)
RETRY_AFTER_S = "2"


def unavailable(exc: Exception) -> tuple[int, str, dict[str, str]]:
    """The 503 for a DATABASE_UNAVAILABLE error: status, detail and headers. Nothing was committed."""
    if isinstance(exc, PoolTimeout):
        detail = ("no database connection came free in time (MEMCTX_POOL_TIMEOUT_S): the database is "
                  "unreachable or every connection is busy; retry shortly")
    else:
        detail = "the database is unavailable (restarting or unreachable); retry shortly"
    log.warning("database unavailable", extra={"fields": {"error": type(exc).__name__}})
    return 503, detail, {"Retry-After": RETRY_AFTER_S}


_RECORD = re.compile(r"^([A-Za-z_]+)\[(\d+)\]$")


def record_loc(record: str | None) -> list[str | int]:
    """The `loc` of a refusal memctx made past validation: its record, `messages[2]`, is the body's
    `messages`, item 2; anything else is the body."""
    match = _RECORD.match(record or "")
    return ["body", match[1], int(match[2])] if match else ["body"]


def install(app: FastAPI) -> None:
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        schema = generate()  # built once, then cached by FastAPI: the replacement is idempotent
        schemas = schema.get("components", {}).get("schemas", {})
        if "HTTPValidationError" in schemas:
            schemas["HTTPValidationError"] = FIELDS_ERROR_SCHEMA
        return schema

    app.openapi = openapi  # type: ignore[method-assign]

    @app.exception_handler(RequestValidationError)
    async def request_validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        # Without echoing the input: it may not even be JSON (NaN, Infinity)
        return fields_answer(list(exc.errors()))

    @app.exception_handler(StarletteHTTPException)
    async def http_exception(request: Request, exc: StarletteHTTPException) -> Response:
        if isinstance(exc.detail, list):  # field_error
            return fields_answer(exc.detail)
        if exc.status_code in (204, 304) or exc.status_code < 200:
            return Response(status_code=exc.status_code, headers=exc.headers)
        return JSONResponse({"detail": str(exc.detail)}, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(InvalidInput)
    async def invalid_input(request: Request, exc: InvalidInput) -> JSONResponse:
        said = str(exc)  # names the record already ("messages[2]: …"): the item says the same
        return JSONResponse({"detail": said, "errors": [{"loc": record_loc(exc.record), "msg": said,
                                                         "type": "value_error"}]}, status_code=422)

    @app.exception_handler(BudgetTooSmall)
    async def budget_too_small(request: Request, exc: BudgetTooSmall) -> JSONResponse:
        return fields_answer([{"loc": ["body", "token_budget"], "msg": str(exc), "type": "value_error"}])

    @app.exception_handler(PoolTimeout)
    @app.exception_handler(psycopg.OperationalError)
    async def database_unavailable(request: Request, exc: Exception) -> JSONResponse:
        status, detail, headers = unavailable(exc)
        return JSONResponse({"detail": detail}, status_code=status, headers=headers)

    @app.exception_handler(UnknownConversation)
    async def unknown_conversation(request: Request, exc: UnknownConversation) -> JSONResponse:
        return JSONResponse({"detail": "conversation not found"}, status_code=404)
