"""The summary-board page's HTML: plain functions that return strings, every piece of user text
through `html.escape` (`e`). No logic beyond layout: the routes hand over what memctx returned.
"""

from __future__ import annotations

from datetime import datetime
from html import escape
from typing import Iterable, Mapping, Sequence
from urllib.parse import quote
from uuid import UUID

from memctx.models import Conversation, Message
from memctx.pipeline.catchup import ChainItem
from memctx.store.dashboard import ContextUse, ConversationOverview, TreeNode
from memctx.summarize.types import SECTIONS, Board, BoardItem

NOTICES = {"summarized": "Summarized: the tree and the board are up to date.",
           "regenerated": "Regenerated: every summary and the board were rebuilt.",
           "edited": "Summary saved. It stays as you wrote it until a regeneration.",
           "closed": "Conversation closed: its long-term summary is written.",
           "item-edited": "Board item saved.",
           "mode-live": "Switched to live: the model now gets memctx's working context.",
           "mode-shadow": "Switched to shadow: the model gets the client's own requests; memctx records what it "
                          "would send."}


def e(value: object) -> str:
    return escape("" if value is None else str(value), quote=True)


def page(title: str, body: str, *, signed_in: bool = True, live: str = "") -> str:
    sign_out = ('<nav class="me"><a href="/ui/profile">Your profile</a>'
                '<form method="post" action="/ui/sign-out"><button class="link">Sign out</button></form></nav>'
                if signed_in else "")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{e(title)} · memctx</title>
<link rel="icon" href="/ui/static/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/ui/static/ui.css">
<script src="/ui/static/ui.js" defer></script>
</head><body{live}>
<header class="top"><a class="brand" href="/ui/">memctx <span>summary board</span></a>{sign_out}</header>
<main id="main">{body}</main>
</body></html>"""


def sign_in(error: str | None = None) -> str:
    alert = f'<p class="error" role="alert">{e(error)}</p>' if error else ""
    return page("Sign in", f"""<section class="card sign-in">
<h1>Sign in</h1>
<p class="muted">Use a memctx API key (<code>mck_…</code>) or a Supabase access token (JWT). You will
see only your own conversations.</p>{alert}
<form method="post" action="/ui/sign-in">
<label for="credential">API key or JWT</label>
<input id="credential" name="credential" type="password" autocomplete="current-password" required autofocus>
<button type="submit">Sign in</button>
</form></section>""", signed_in=False)


def not_found() -> str:
    return page("Not found", '<section class="card"><h1>Conversation not found</h1>'
                             '<p><a href="/ui/">Back to your conversations</a></p></section>')


def refused(reason: str, conversation: str) -> str:
    return page("Not saved", f'<section class="card"><h1>Not saved</h1><p>{e(reason)}</p>'
                             f'<p><a href="/ui/c/{e(quote(conversation, safe=""))}">Back to the conversation</a></p>'
                             f'</section>')


def _when(value: datetime | None) -> str:
    if value is None:
        return "—"
    return f'<time datetime="{e(value.isoformat())}">{e(value.strftime("%Y-%m-%d %H:%M"))}</time>'


def _num(value: int | float | None) -> str:
    return "—" if value is None else f"{value:,}"


def _share(c: ConversationOverview) -> str:
    return "—" if c.saved_share is None else f"{c.saved_share:.0%}"


def _name(external_id: str | None, title: str | None, id_: UUID) -> str:
    return title or external_id or str(id_)[:8]


def conversation_list(items: Sequence[ConversationOverview]) -> str:
    if not items:
        return page("Your conversations", '<h1>Your conversations</h1><p class="empty card">No conversations yet. '
                                          'Store messages through the API and they appear here.</p>')
    rows = "".join(f"""<li class="conv card"><a href="/ui/c/{c.id}">
<span class="conv-name">{e(_name(c.external_id, c.title, c.id))}</span>
<span class="conv-meta">{e(c.external_id or "")} · last message {_when(c.last_message_at)}{" · closed" if c.closed_at else ""}</span></a>
<dl class="stats">
<div><dt>Messages</dt><dd>{_num(c.message_count)}</dd></div>
<div><dt>Summaries</dt><dd>{_num(c.live_summaries)}</dd></div>
<div><dt>Tokens saved</dt><dd>{_num(c.tokens_saved)}</dd></div>
<div><dt>Saved share</dt><dd>{_share(c)}</dd></div>
</dl>{_pending(c.pending)}</li>""" for c in items)
    return page("Your conversations", f'<h1>Your conversations</h1><ul class="convs">{rows}</ul>')


def _pending(pending: int) -> str:
    hidden = "" if pending else " hidden"
    return (f'<p class="working" data-pending aria-live="polite"{hidden}><span class="dot" aria-hidden="true"></span>'
            f'<span data-pending-text>Summarizing: {pending} new messages pending</span></p>')


def conversation(conv: Conversation, overview: ConversationOverview, board: Board | None,
                 sources: Mapping[UUID, Message], tree: Sequence[TreeNode], chain: Sequence[ChainItem],
                 contexts: Sequence[ContextUse], version: Mapping[str, object], notice: str | None,
                 shadow: str = "") -> str:
    """The conversation's page; `shadow` is its shadow-run card (api/ui/shadow.py), if any."""
    ref = quote(str(conv.id))
    note = f'<p class="notice" role="status">{e(NOTICES[notice])}</p>' if notice in NOTICES else ""
    closed = f' · closed {_when(conv.closed_at)}' if conv.closed_at else ""
    body = f"""<nav class="crumbs"><a href="/ui/">Conversations</a></nav>
<div class="head"><div><h1>{e(_name(conv.external_id, conv.title, conv.id))}</h1>
<p class="muted">{e(conv.external_id or conv.id)} · {_num(overview.message_count)} messages{closed}</p></div>
<div class="actions">
<form method="post" action="/ui/c/{ref}/summarize" data-busy="Summarizing…"><button>Summarize now</button></form>
<form method="post" action="/ui/c/{ref}/regenerate" data-busy="Regenerating…"
 data-confirm="Discard every summary, your edits too, and rebuild them?"><button class="secondary">Regenerate</button></form>
{"" if conv.closed_at else _close(ref)}
</div></div>
{note}{_pending(int(version["pending"]))}
<dl class="stats wide">
<div><dt>Messages</dt><dd>{_num(overview.message_count)}</dd></div>
<div><dt>Message tokens</dt><dd>{_num(overview.message_tokens)}</dd></div>
<div><dt>Live summaries</dt><dd>{_num(overview.live_summaries)}</dd></div>
<div><dt>Tokens saved</dt><dd>{_num(overview.tokens_saved)}</dd></div>
<div><dt>Saved share</dt><dd>{_share(overview)}</dd></div>
</dl>{shadow}
<div class="grid">
<section class="card board" aria-labelledby="board-h"><h2 id="board-h">Board</h2>{_board(board, sources, ref)}</section>
<div class="side">
<section class="card" aria-labelledby="tree-h"><h2 id="tree-h">Summary tree</h2>{_tree(tree, ref)}</section>
<section class="card" aria-labelledby="chain-h"><h2 id="chain-h">Live chain</h2>{_chain(chain)}</section>
</div></div>
<section class="card contexts" aria-labelledby="ctx-h"><h2 id="ctx-h">Last working contexts</h2>{_contexts(contexts)}</section>"""
    live = f' data-live="/ui/c/{ref}/live" data-version="{e(version["version"])}"'
    return page(_name(conv.external_id, conv.title, conv.id), body, live=live)


def _close(ref: str) -> str:
    """Close, offered only while the conversation is open."""
    return (f'<form method="post" action="/ui/c/{ref}/close" data-busy="Closing…"\n'
            ' data-confirm="Close this conversation and write its long-term summary?">'
            '<button class="secondary">Close</button></form>')


def _board(board: Board | None, sources: Mapping[UUID, Message], ref: str) -> str:
    if board is None:
        return '<p class="empty">No board yet: the worker builds it as messages arrive, or press Summarize now.</p>'
    parts = [f'<p class="summary">{e(board.summary) or "<span class=muted>No summary yet.</span>"}</p>',
             f'<p class="muted small">Covers {_num(board.message_count)} messages, up to #{board.last_seq}.</p>']
    for spec in SECTIONS:
        items = board.section(spec.name)
        if not items:
            continue
        numbered = list(enumerate(items))  # an item's place in its section is how an edit names it
        if spec.grouped_by:
            groups: dict[str, list[tuple[int, BoardItem]]] = {}
            for index, item in numbered:
                groups.setdefault(item.group or "", []).append((index, item))
            inner = "".join(f'<h4>{e(group.capitalize() or "Unattributed")}</h4>'
                            f'{_items(group_items, sources, f"{ref}/board/{spec.name}")}'
                            for group, group_items in groups.items())
        else:
            inner = _items(numbered, sources, f"{ref}/board/{spec.name}")
        parts.append(f'<section class="section" data-section="{spec.name}"><h3>{e(spec.title)} '
                     f'<span class="count">{len(items)}</span></h3>{inner}</section>')
    return "".join(parts)


def _items(items: Iterable[tuple[int, BoardItem]], sources: Mapping[UUID, Message], action: str) -> str:
    """The items, each with its sources and an edit form posting to `/ui/c/{action}/{index}`."""
    return '<ul class="items">' + "".join(
        f'<li><span class="item-text">{e(i.text)}</span>{" <span class=tag>edited</span>" if i.edited else ""}'
        f'{_sources(i, sources)}<details class="edit-item"><summary>Edit</summary>'
        f'<form method="post" action="/ui/c/{action}/{n}" data-busy="Saving…">'
        f'<label for="i-{e(action)}-{n}">Item text</label>'
        f'<textarea id="i-{e(action)}-{n}" name="text" rows="3" required>{e(i.text)}</textarea>'
        f'<button>Save item</button></form></details></li>'
        for n, i in items) + "</ul>"


def _sources(item: BoardItem, sources: Mapping[UUID, Message]) -> str:
    if not item.sources:
        return ""
    quoted = []
    for s in item.sources:
        m = sources.get(s.id)
        label = s.external_id or (f"#{m.seq}" if m else str(s.id)[:8])
        text = _message(m) if m else '<p class="muted">That message is no longer stored.</p>'
        quoted.append(f'<details class="src"><summary>{e(label)}</summary>{text}</details>')
    return f'<div class="sources"><span class="muted small">from</span> {"".join(quoted)}</div>'


def _message(m: Message) -> str:
    ext = f" · {e(m.external_id)}" if m.external_id else ""
    return (f'<blockquote class="msg"><p class="msg-meta">#{m.seq} · {e(m.speaker)}{ext}</p>'
            f'<p>{e(m.text)}</p></blockquote>')


def _tree(nodes: Sequence[TreeNode], ref: str) -> str:
    if not nodes:
        return '<p class="empty">No summaries yet.</p>'
    return '<ul class="tree">' + "".join(_node(n, ref) for n in nodes) + "</ul>"


def _node(n: TreeNode, ref: str) -> str:
    kind = "Master" if n.is_master else f"Level {n.level}"
    flags = (" <span class=tag>edited</span>" if n.edited else "") + ("" if n.live else " <span class=tag>folded</span>")
    below = ("".join(_node(c, ref) for c in n.children) if n.children else
             "".join(f"<li>{_message(m)}</li>" for m in n.messages))
    # The node's own disclosure shows the form: editing is one click away, not two.
    edit = (f'<form class="edit" method="post" action="/ui/c/{ref}/summaries/{n.id}">'
            f'<label for="t-{n.id}">Edit the summary text</label>'
            f'<textarea id="t-{n.id}" name="text" rows="6" required>{e(n.content)}</textarea>'
            f'<button>Save summary</button></form>') if n.live else ""
    covered = (f"{len(n.children)} summaries" if n.children else f"{len(n.messages)} messages")
    return f"""<li class="node{' master' if n.is_master else ''}" data-summary="{n.id}">
<details id="n-{n.id}"><summary><span class="kind">{kind}</span> messages {n.first_seq}–{n.last_seq}
<span class="muted small">· {_num(n.token_count)} tokens · {covered}</span>{flags}</summary>
<p class="summary-text">{e(n.content)}</p>{edit}<ul class="tree">{below}</ul></details></li>"""


def _chain(items: Sequence[ChainItem]) -> str:
    if not items:
        return '<p class="empty">Nothing stored yet.</p>'
    rows = []
    for c in items:
        label = "Master" if c.is_master else (f"L{c.level} summary" if c.kind == "summary" else e(c.speaker or c.role))
        span = f"{c.first_seq}–{c.last_seq}" if c.first_seq != c.last_seq else f"#{c.first_seq}"
        rows.append(f'<li class="{c.kind}"><span class="chain-kind">{label}</span> <span class="muted small">{span} · '
                    f'{_num(c.token_count)} tok</span><p>{e(c.text)}</p></li>')
    return f'<ol class="chain">{"".join(rows)}</ol>'


def _contexts(contexts: Sequence[ContextUse]) -> str:
    if not contexts:
        return '<p class="empty">No working context built yet (POST /v1/conversations/{c}/context).</p>'
    rows = "".join(f"""<tr><td>{_when(c.created_at)}</td><td>{e(c.kind)}</td>
<td>{_num(c.tokens_used)} / {_num(c.token_budget)}</td><td>{_num(c.full_history_tokens)}</td>
<td class="wrap">{e(", ".join(f"{k} {v}" for k, v in sorted(c.sources.items())) or "—")}</td>
<td>{"—" if c.total_ms is None else f"{c.total_ms:.0f} ms"}</td></tr>""" for c in contexts)
    return f"""<div class="scroll"><table><thead><tr><th scope="col">When</th><th scope="col">Kind</th>
<th scope="col">Used / budget</th><th scope="col">Full history</th><th scope="col">Sources</th>
<th scope="col">Latency</th></tr></thead><tbody>{rows}</tbody></table></div>"""
