"""Operations: `/healthz` (the process answers) and `/readyz` (the embedder has loaded, and the
database answers and is migrated)."""

from __future__ import annotations

from typing import Any

import psycopg
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from psycopg_pool import PoolTimeout

from memctx.app import NotReady, check_database
from memctx.migrate import EmbeddingSpaceMismatch

router = APIRouter(tags=["operations"])

READY_TIMEOUT_S = 5.0


@router.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", responses={503: {"description": "the embedder is loading, or the database is unreachable "
                                                     "or not migrated"}})
def readyz(request: Request) -> Any:
    memctx_app = request.app.state.memctx
    if not request.app.state.embedder_loaded.is_set():
        return JSONResponse({"status": "not ready", "reason": "the embedder is loading"}, status_code=503)
    try:
        with memctx_app.pool.connection(timeout=READY_TIMEOUT_S) as conn:
            check_database(conn, memctx_app.embedder)
    except (NotReady, EmbeddingSpaceMismatch, PoolTimeout, psycopg.Error) as exc:
        return JSONResponse({"status": "not ready", "reason": str(exc)}, status_code=503)
    return {"status": "ready"}
