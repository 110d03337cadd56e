"""What the CLI modules share: the error console, one-line failures, and reading ids.

Owns: turning bad input into one line on stderr and an exit code (2 for bad input), never a
traceback; reading a UUID argument; resolving a conversation given as a memctx UUID or as the
user's own external id (another user's conversation looks the same as an unknown one). It does
not print results (each command does) and holds no business logic. It imports only what every
command needs (the command line starts in a fraction of a second: `memctx keys create` is one
statement); the library's modules are imported by the commands that use them.
"""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn
from uuid import UUID

import typer
from rich.console import Console
from rich.markup import escape

from memctx.models import InvalidInput

err = Console(stderr=True)

USER_HELP = "owner user UUID (default: the local user)"
CONVERSATION_HELP = "conversation UUID or external id (e.g. conv-26)"

# Bad input (not an internal error): exit code 2, as for a usage error.
BAD_INPUT = 2


def fail(message: str, code: int = 1) -> NoReturn:
    """Print one error line on stderr and exit; user text in `message` is printed as is."""
    err.print(f"[red]error:[/red] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def parse_uuid(value: str, what: str) -> UUID:
    try:
        return UUID(value)
    except ValueError:
        fail(f"{what} {value!r} is not a UUID", BAD_INPUT)


def user_id(value: str | None) -> UUID:
    """The --user option: a UUID, or the local user when not given."""
    from memctx.store import DEFAULT_USER  # the store loads numpy: only the commands that use it pay

    return DEFAULT_USER if value is None else parse_uuid(value, "--user")


def conversation_id(memctx_app, user: UUID, value: str) -> UUID:
    """A conversation of this user, named by its memctx UUID or by its external id
    (`MessageStore.find_conversation`). Unknown, or another user's: one error line, exit code 2."""
    from memctx.store import UnknownConversation

    try:
        return memctx_app.store.find_conversation(user, value).id
    except (UnknownConversation, InvalidInput):
        fail(f"unknown conversation {value!r}", BAD_INPUT)


def tls_files(certfile: Path | None, keyfile: Path | None) -> dict[str, str]:
    """uvicorn's options for HTTPS from a certificate and its key (both, or neither: plain HTTP);
    a missing or unreadable file is one error line, exit code 2, before anything starts."""
    if (certfile is None) != (keyfile is None):
        fail("HTTPS needs both --ssl-certfile and --ssl-keyfile (MEMCTX_API_SSL_CERTFILE, "
             "MEMCTX_API_SSL_KEYFILE)", BAD_INPUT)
    if certfile is None or keyfile is None:
        return {}
    for option, path in (("--ssl-certfile", certfile), ("--ssl-keyfile", keyfile)):
        try:
            path.read_bytes()
        except OSError as exc:
            fail(f"{option} {path}: {exc.strerror or exc}", BAD_INPUT)
    return {"ssl_certfile": str(certfile), "ssl_keyfile": str(keyfile)}
