"""The page's profile section at /ui/profile: what memctx learned about the signed-in person, with
the messages each item came from; edit, delete, add; rate an item or a source message (useful,
wrong, outdated); the history of replaced values, the deletions, the tool procedures, and every
rating given (`memctx.feedback_log`). Routes and their HTML, on the page's router; each action
answers 303 back to the page, so it works without script, as the rest of the page does.
"""

from __future__ import annotations

from typing import Annotated, Sequence
from uuid import UUID

from fastapi import Form
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from memctx.api.ui.render import _when, e, page
from memctx.api.ui.routes import UiCaller, router
from memctx.models import InvalidInput
from memctx.pipeline import profile

NOTICES = {"edited": "Saved: your words are kept, also when memctx learns from those messages again.",
           "deleted": "Deleted: it is out of every context and will not be learned again.",
           "added": "Added.", "rated": "Thanks: your rating is stored."}
RATINGS = (("useful", "Useful"), ("wrong", "Wrong"), ("outdated", "Outdated"))


def _back(notice: str) -> RedirectResponse:
    return RedirectResponse(f"/ui/profile?done={notice}", status_code=303)


@router.get("/profile", response_class=HTMLResponse)
def profile_page(who: UiCaller, done: str | None = None) -> HTMLResponse:
    app, user = who.app, who.user_id
    items = profile.list_profile(app, user, status=None)
    return HTMLResponse(render(items, profile.procedures(app, user), profile.ratings(app, user, limit=50), done))


@router.post("/profile/add")
def add(who: UiCaller, value: Annotated[str, Form(max_length=2000)],
        kind: Annotated[str, Form(max_length=20)] = "fact") -> Response:
    try:
        profile.add_item(who.app, who.user_id, value, kind=kind)
    except InvalidInput as exc:
        return HTMLResponse(refused(str(exc)), status_code=422)
    return _back("added")


@router.post("/profile/{item_id}")
def edit(item_id: UUID, who: UiCaller, value: Annotated[str, Form(max_length=2000)]) -> Response:
    try:
        profile.edit_item(who.app, who.user_id, item_id, value)
    except LookupError:
        return HTMLResponse(refused("That item is not in your profile."), status_code=404)
    except InvalidInput as exc:
        return HTMLResponse(refused(str(exc)), status_code=422)
    return _back("edited")


@router.post("/profile/{item_id}/delete")
def delete(item_id: UUID, who: UiCaller) -> Response:
    try:
        profile.delete_item(who.app, who.user_id, item_id)
    except LookupError:
        return HTMLResponse(refused("That item is not in your profile."), status_code=404)
    return _back("deleted")


@router.post("/feedback")
def rate(who: UiCaller, kind: Annotated[str, Form(max_length=20)], target: Annotated[UUID, Form()],
         rating: Annotated[str, Form(max_length=20)]) -> Response:
    try:
        profile.rate(who.app, who.user_id, kind, target, rating, via="page", rated_by=str(who.user_id))
    except LookupError:
        return HTMLResponse(refused("There is nothing of yours with that id."), status_code=404)
    except InvalidInput as exc:
        return HTMLResponse(refused(str(exc)), status_code=422)
    return _back("rated")


def refused(reason: str) -> str:
    return page("Not saved", f'<section class="card"><h1>Not saved</h1><p>{e(reason)}</p>'
                             '<p><a href="/ui/profile">Back to your profile</a></p></section>')


def render(items: Sequence[profile.ProfileItem], procedures: Sequence[profile.Procedure],
           ratings: Sequence[profile.StoredRating], notice: str | None) -> str:
    note = f'<p class="notice" role="status">{e(NOTICES[notice])}</p>' if notice in NOTICES else ""
    active = [i for i in items if i.status == "active"]
    people: dict[str, list[profile.ProfileItem]] = {}
    for item in active:
        people.setdefault(item.person, []).append(item)
    groups = "".join(f'<h3>{e("You" if person == "user" else person)} <span class="count">{len(group)}</span></h3>'
                     f'<ul class="items profile">{"".join(_item(i) for i in group)}</ul>'
                     for person, group in people.items()) or \
        '<p class="empty">Nothing learned yet: memctx learns as the worker summarizes your conversations.</p>'
    history = [i for i in items if i.status == "replaced"]
    deleted = [i for i in items if i.status == "deleted"]
    body = f"""<nav class="crumbs"><a href="/ui/">Conversations</a></nav>
<div class="head"><div><h1>Your profile</h1>
<p class="muted">What memctx learned from what you said, each item with the messages it came from. It is
in your working contexts when it bears on what you ask; correct or delete anything.</p></div></div>{note}
<section class="card" aria-labelledby="p-h"><h2 id="p-h">Learned about you</h2>{groups}
<details class="edit-item"><summary>Add an item</summary>
<form method="post" action="/ui/profile/add" data-busy="Saving…"><label for="p-add">In your words</label>
<textarea id="p-add" name="value" rows="2" required></textarea><label for="p-kind">Kind</label>
<select id="p-kind" name="kind"><option value="fact">fact</option><option value="preference">preference</option>
<option value="instruction">standing instruction</option><option value="plan">plan</option></select>
<button>Add</button></form></details></section>
<section class="card" aria-labelledby="h-h"><h2 id="h-h">History <span class="count">{len(history)}</span></h2>
{_plain(history, "Nothing replaced yet.", replaced=True)}</section>
<section class="card" aria-labelledby="d-h"><h2 id="d-h">Deleted <span class="count">{len(deleted)}</span></h2>
{_plain(deleted, "Nothing deleted.")}</section>
<section class="card" aria-labelledby="t-h"><h2 id="t-h">Tool procedures <span class="count">{len(procedures)}</span></h2>
{_procedures(procedures)}</section>
<section class="card contexts" aria-labelledby="r-h"><h2 id="r-h">Your ratings</h2>{_ratings(ratings)}</section>"""
    return page("Your profile", body)


def _rate(kind: str, target: UUID, label: str) -> str:
    buttons = "".join(f'<button name="rating" value="{v}" class="link">{t}</button>' for v, t in RATINGS)
    return (f'<form class="rate" method="post" action="/ui/feedback" aria-label="Rate {e(label)}">'
            f'<input type="hidden" name="kind" value="{kind}"><input type="hidden" name="target" value="{target}">'
            f'{buttons}</form>')


def _item(i: profile.ProfileItem) -> str:
    seen = f"seen {i.seen_count}×" if i.seen_count else "added by you"
    tags = (f' <span class="tag">{e(i.kind)}</span>' + (" <span class=tag>edited</span>" if i.edited_at else "")
            + ("" if i.explicit else " <span class=tag>inferred</span>"))
    sources = "".join(f'<li>{_when(s.said_at)} · {e(s.external_id or str(s.message_id)[:8])} '
                      f'{_rate("message", s.message_id, "this message")}</li>' for s in i.sources)
    source_list = f'<details class="src"><summary>from {len(i.sources)} messages</summary><ul>{sources}</ul></details>' \
        if i.sources else ""
    return (f'<li data-item="{i.id}"><span class="item-text">{e(i.value)}</span>{tags}'
            f'<p class="muted small">{e(i.topic)} · {seen} · confidence {i.confidence:.2f} · first {_when(i.first_seen)}'
            f' · last {_when(i.last_seen)}</p>{source_list}{_rate("profile_item", i.id, i.value)}'
            f'<details class="edit-item"><summary>Edit</summary>'
            f'<form method="post" action="/ui/profile/{i.id}" data-busy="Saving…"><label for="v-{i.id}">In your words</label>'
            f'<textarea id="v-{i.id}" name="value" rows="2" required>{e(i.value)}</textarea><button>Save</button></form>'
            f'<form method="post" action="/ui/profile/{i.id}/delete" data-confirm="Delete this for good?">'
            f'<button class="secondary">Delete</button></form></details></li>')


def _plain(items: Sequence[profile.ProfileItem], empty: str, *, replaced: bool = False) -> str:
    if not items:
        return f'<p class="empty">{empty}</p>'
    when = (lambda i: f"replaced {_when(i.replaced_at)}") if replaced else (lambda i: f"deleted {_when(i.deleted_at)}")
    return '<ul class="items">' + "".join(f'<li><span class="item-text">{e(i.value)}</span> '
                                          f'<span class="muted small">{when(i)}</span></li>' for i in items) + "</ul>"


def _procedures(procedures: Sequence[profile.Procedure]) -> str:
    if not procedures:
        return '<p class="empty">No tool errors seen yet.</p>'
    return '<ul class="items">' + "".join(
        f'<li><code>{e(p.tool)}</code>: “{e(p.error)}” → <code>{e(p.fix or "nothing worked yet")}</code> '
        f'<span class="muted small">resolved {p.resolved} of {p.seen_count} · last {_when(p.last_seen)}</span>'
        f'{_rate("procedure", p.id, p.tool)}</li>' for p in procedures) + "</ul>"


def _ratings(ratings: Sequence[profile.StoredRating]) -> str:
    if not ratings:
        return '<p class="empty">No ratings yet.</p>'
    rows = "".join(f'<tr><td>{_when(r.created_at)}</td><td>{e(r.rating)}</td><td>{e(r.target_kind)}</td>'
                   f'<td class="wrap">{e(r.target_text or "—")}</td><td>{e(r.via)}</td></tr>' for r in ratings)
    return ('<div class="scroll"><table><thead><tr><th scope="col">When</th><th scope="col">Rating</th>'
            '<th scope="col">Of</th><th scope="col">What</th><th scope="col">Through</th></tr></thead>'
            f'<tbody>{rows}</tbody></table></div>')
