"""memctx's refusals as HTTP answers: bad input is a 422 naming the field, an unknown or another
tenant's conversation a 404, the same for both, and a pool with no free connection or a database
that is restarting or unreachable a 503 with Retry-After. Nothing here decides; it only translates."""

from __future__ import annotations

import logging
from typing import NoReturn

import psycopg

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from psycopg_pool import PoolTimeout

from memctx.assemble import BudgetTooSmall
from memctx.models import InvalidInput
from memctx.store import UnknownConversation

log = logging.getLogger("memctx.api")


def field_error(loc: list[str | int], message: str) -> NoReturn:
    """A 422 shaped like FastAPI's own validation errors."""
    raise HTTPException(422, [{"loc": loc, "msg": message, "type": "value_error"}])


def install(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def request_validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        # FastAPI's own answer, without echoing the input: it may not even be JSON (NaN, Infinity)
        return JSONResponse({"detail": [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]}
                                        for e in exc.errors()]}, status_code=422)

    @app.exception_handler(InvalidInput)
    async def invalid_input(request: Request, exc: InvalidInput) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=422)

    @app.exception_handler(BudgetTooSmall)
    async def budget_too_small(request: Request, exc: BudgetTooSmall) -> JSONResponse:
        return JSONResponse({"detail": [{"loc": ["body", "token_budget"], "msg": str(exc), "type": "value_error"}]},
                            status_code=422)

    @app.exception_handler(PoolTimeout)
    async def busy(request: Request, exc: PoolTimeout) -> JSONResponse:
        return JSONResponse({"detail": "every database connection is busy; retry shortly"}, status_code=503,
                            headers={"Retry-After": "1"})

    @app.exception_handler(psycopg.OperationalError)
    async def database_unavailable(request: Request, exc: psycopg.OperationalError) -> JSONResponse:
        # a restart (AdminShutdown), a lost connection, a server starting up: nothing was committed
        log.warning("database unavailable", extra={"fields": {"error": type(exc).__name__}})
        return JSONResponse({"detail": "the database is unavailable (restarting or unreachable); retry shortly"},
                            status_code=503, headers={"Retry-After": "2"})

    @app.exception_handler(UnknownConversation)
    async def unknown_conversation(request: Request, exc: UnknownConversation) -> JSONResponse:
        return JSONResponse({"detail": "conversation not found"}, status_code=404)
