"""The page's routes: sign in and out, the conversation list, one conversation, its live version,
and the actions (summarize now, regenerate, edit a summary or a board item, close). Each parses, resolves the
caller from the cookie, calls memctx as that caller and renders; actions answer 303 back to the
page (post/redirect/get), so everything works without script.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from typing import Annotated, Literal
from urllib.parse import quote, urlsplit
from uuid import UUID

from fastapi import APIRouter, Depends, Form, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from memctx.api.ui import render, shadow as shadow_view
from memctx.auth import Caller, Unauthorized
from memctx.models import InvalidInput
from memctx.pipeline import catchup, longterm
from memctx.pipeline.board import edit_board_item, get_board
from memctx.store import UnknownConversation, dashboard, shadow

COOKIE = "memctx_ui"
STATIC = {"ui.css": "text/css; charset=utf-8", "ui.js": "text/javascript; charset=utf-8",
          "favicon.svg": "image/svg+xml"}

router = APIRouter(prefix="/ui", include_in_schema=False)
root = APIRouter(include_in_schema=False)  # what a browser asks of any page of the server


def same_origin(request: Request) -> None:
    """A POST from another origin (a page elsewhere submitting a form here) is refused: every
    action, signing in and signing out included."""
    if request.method == "POST":
        origin = request.headers.get("origin")
        if origin and urlsplit(origin).netloc != request.headers.get("host"):
            raise HTTPException(403, "cross-origin request refused")


def ui_caller(request: Request) -> Caller:
    """The signed-in caller, from the cookie, through the API's own authenticator; a request
    without a valid one is sent to the sign-in form. A POST from another origin is refused."""
    same_origin(request)
    try:
        return request.app.state.authenticator.caller(request.cookies.get(COOKIE, ""))
    except Unauthorized:
        raise HTTPException(303, headers={"Location": "/ui/sign-in"}) from None


UiCaller = Annotated[Caller, Depends(ui_caller)]


def _back(conversation: str, notice: str) -> RedirectResponse:
    return RedirectResponse(f"/ui/c/{quote(conversation, safe='')}?done={notice}", status_code=303)


class NotFound(Exception):
    """An unknown conversation, or another user's: the page's 404."""


def _conversation_id(who: Caller, name: str) -> UUID:
    """The caller's conversation named in the path, by UUID or external id, as the page's own
    address names it."""
    try:
        return who.app.store.find_conversation(who.user_id, name).id
    except (UnknownConversation, InvalidInput):
        raise NotFound(name) from None


def not_found_page(request: Request, exc: NotFound) -> HTMLResponse:
    return HTMLResponse(render.not_found(), status_code=404)


@router.get("/sign-in", response_class=HTMLResponse)
def sign_in_form() -> HTMLResponse:
    return HTMLResponse(render.sign_in())


@router.post("/sign-in", dependencies=[Depends(same_origin)])
def sign_in(request: Request, credential: Annotated[str, Form(max_length=8192)]) -> Response:
    credential = credential.strip()
    try:
        request.app.state.authenticator.user(credential)
    except Unauthorized:
        return HTMLResponse(render.sign_in("That key or token is not valid."), status_code=401)
    response = RedirectResponse("/ui/", status_code=303)
    response.set_cookie(COOKIE, credential, path="/ui", httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")
    return response


@router.post("/sign-out", dependencies=[Depends(same_origin)])
def sign_out() -> Response:
    response = RedirectResponse("/ui/sign-in", status_code=303)
    response.delete_cookie(COOKIE, path="/ui", httponly=True, samesite="strict")
    return response


@router.get("/", response_class=HTMLResponse)
def conversations(who: UiCaller) -> HTMLResponse:
    return HTMLResponse(render.conversation_list(dashboard.conversations(who.app.pool, who.user_id)))


@router.get("/c/{conversation}", response_class=HTMLResponse)
def conversation(conversation: str, request: Request, who: UiCaller, done: str | None = None) -> HTMLResponse:
    try:
        conv = who.app.store.find_conversation(who.user_id, conversation)
    except (UnknownConversation, InvalidInput):
        return HTMLResponse(render.not_found(), status_code=404)
    app, user = who.app, who.user_id
    board = get_board(app, user, conv.id)
    source_ids = [s.id for items in (board.items.values() if board else ()) for i in items for s in i.sources]
    overview = dashboard.conversations(app.pool, user, conversation_id=conv.id)[0]
    return HTMLResponse(render.conversation(
        conv, overview, board, dashboard.messages_by_ids(app.pool, user, conv.id, source_ids),
        dashboard.summary_tree(app.pool, user, conv.id), catchup.live_chain(app, user, conv.id),
        dashboard.recent_contexts(app.pool, user, conv.id), dashboard.version(app.pool, user, conv.id) or {}, done,
        shadow=_shadow_card(who, conv.id, quote(str(conv.id)), request.app.state.settings.proxy_mode)))


def _shadow_card(who: Caller, conv: UUID, ref: str, server_mode: str) -> str:
    mode = shadow.proxy_mode(who.app.pool, who.user_id, conv)
    return shadow_view.card(ref, mode, mode or server_mode, shadow.totals(who.app.pool, who.user_id, conv),
                            shadow.series(who.app.pool, who.user_id, conv))


# The actions below, like the page, take the conversation's UUID or its external id.
@router.get("/c/{conversation}/live")
def live(conversation: str, who: UiCaller) -> Response:
    """`{version, pending}`: the page polls this and redraws when the version moves."""
    try:
        found = dashboard.version(who.app.pool, who.user_id, _conversation_id(who, conversation))
    except NotFound:
        found = None
    if found is None:
        return JSONResponse({"detail": "conversation not found"}, status_code=404)
    return JSONResponse(found, headers={"Cache-Control": "no-store"})


@router.post("/c/{conversation}/summarize")
def summarize(conversation: str, who: UiCaller) -> Response:
    catchup.catch_up(who.app, who.user_id, _conversation_id(who, conversation), force_board=True)
    return _back(conversation, "summarized")


@router.post("/c/{conversation}/regenerate")
def regenerate(conversation: str, who: UiCaller) -> Response:
    catchup.regenerate(who.app, who.user_id, _conversation_id(who, conversation))
    return _back(conversation, "regenerated")


@router.post("/c/{conversation}/proxy-mode")
def proxy_mode(conversation: str, who: UiCaller, mode: Annotated[Literal["live", "shadow"], Form()]) -> Response:
    """The one setting that switches the conversation between the shadow run and live."""
    shadow.set_proxy_mode(who.app.pool, who.user_id, _conversation_id(who, conversation), mode)
    return _back(conversation, f"mode-{mode}")


@router.post("/c/{conversation}/close")
def close(conversation: str, who: UiCaller) -> Response:
    longterm.close_conversation(who.app, who.user_id, _conversation_id(who, conversation), explicit=True)
    return _back(conversation, "closed")


@router.post("/c/{conversation}/summaries/{summary_id}")
def edit_summary(conversation: str, summary_id: UUID, who: UiCaller,
                 text: Annotated[str, Form(max_length=200_000)]) -> Response:
    _conversation_id(who, conversation)
    try:
        catchup.edit_summary(who.app, who.user_id, summary_id, text.strip())
    except LookupError:
        return HTMLResponse(render.not_found(), status_code=404)
    except ValueError as exc:  # empty, NUL bytes, too long: said on the page, nothing stored
        return HTMLResponse(render.refused(str(exc), conversation), status_code=422)
    return _back(conversation, "edited")


@router.post("/c/{conversation}/board/{section}/{index}")
def edit_item(conversation: str, section: str, index: int, who: UiCaller,
              text: Annotated[str, Form(max_length=20_000)]) -> Response:
    try:
        edit_board_item(who.app, who.user_id, _conversation_id(who, conversation), section, index, text.strip())
    except LookupError:  # no board, no such section or item, or not the caller's conversation
        return HTMLResponse(render.not_found(), status_code=404)
    except ValueError as exc:  # empty, NUL bytes: said on the page, nothing stored
        return HTMLResponse(render.refused(str(exc), conversation), status_code=422)
    return _back(conversation, "item-edited")


@cache
def _static_file(name: str) -> bytes:
    """A packaged static file, read once per process."""
    return files("memctx.api.ui").joinpath("static", name).read_bytes()


@router.get("/static/{name}")
def static(name: str) -> Response:
    if name not in STATIC:
        raise HTTPException(404)
    return Response(_static_file(name), media_type=STATIC[name], headers={"Cache-Control": "no-cache"})


@root.get("/favicon.ico")
def favicon() -> Response:
    """The page's icon, for the browsers that ask the server's root for it (the API's pages, /docs)."""
    return Response(_static_file("favicon.svg"), media_type=STATIC["favicon.svg"],
                    headers={"Cache-Control": "max-age=86400"})
