"""The conversation page's shadow-run card: what the client sent against what memctx would have
sent, in totals and as a plot over the conversation's requests, and the one setting that switches
the conversation between shadow and live.

Owns only the HTML (server-rendered, the plot an inline SVG: nothing loaded from elsewhere); the
numbers come from memctx.store.shadow, as the caller reads them.
"""

from __future__ import annotations

from typing import Sequence

from memctx.api.ui.render import e
from memctx.store.shadow import ShadowPoint, ShadowTotals

WIDTH, HEIGHT, PAD = 640, 220, 44  # the plot's viewBox and its margin for the axes' labels


def card(ref: str, mode: str | None, effective: str, totals: ShadowTotals, points: Sequence[ShadowPoint]) -> str:
    """The card, or nothing for a conversation that is live and never ran in shadow mode."""
    if effective != "shadow" and not totals.requests:
        return ""
    switch_to = "live" if effective == "shadow" else "shadow"
    said = {"shadow": "Shadow run: the model gets the client's own requests; memctx records what it would send.",
            "live": "Live: the model gets memctx's working context."}[effective]
    own = "its own setting" if mode else "the server's setting (MEMCTX_PROXY_MODE)"
    share = "—" if totals.context_share is None else f"{totals.context_share:.0%}"
    kept = "—" if totals.kept_share is None else f"{totals.kept_share:.0%}"
    return f"""<section class="card shadow" aria-labelledby="shadow-h"><div class="head">
<div><h2 id="shadow-h">Shadow run</h2><p class="muted small">{e(said)} From {e(own)}.</p></div>
<form method="post" action="/ui/c/{ref}/proxy-mode" data-busy="Switching…"
 data-confirm="Switch this conversation to {switch_to}?"><input type="hidden" name="mode" value="{switch_to}">
<button class="secondary">Switch to {switch_to}</button></form></div>
<dl class="stats wide">
<div><dt>Shadow requests</dt><dd>{totals.requests:,}</dd></div>
<div><dt>Client tokens</dt><dd>{totals.client_tokens:,}</dd></div>
<div><dt>memctx tokens</dt><dd>{totals.context_tokens:,}</dd></div>
<div><dt>memctx / client</dt><dd>{share}</dd></div>
<div><dt>History kept whole</dt><dd>{kept}</dd></div>
</dl>{plot(points)}</section>"""


def plot(points: Sequence[ShadowPoint]) -> str:
    """Tokens per request, the client's and memctx's, over the conversation's shadow requests."""
    if not points:
        return '<p class="empty">No shadow request yet.</p>'
    top = max(max(p.client_tokens, p.context_tokens) for p in points) or 1
    span = max(len(points) - 1, 1)

    def line(values: Sequence[int]) -> str:
        return " ".join(f"{PAD + (WIDTH - 2 * PAD) * i / span:.1f},{HEIGHT - PAD - (HEIGHT - 2 * PAD) * v / top:.1f}"
                        for i, v in enumerate(values))

    first, last = points[0].created_at, points[-1].created_at
    summary = (f"Tokens per request over {len(points)} shadow requests: the client sent up to {top:,}; memctx would "
               f"have sent {points[-1].context_tokens:,} at the last, against the client's {points[-1].client_tokens:,}.")
    return f"""<figure class="plot"><svg viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-labelledby="plot-t">
<title id="plot-t">{e(summary)}</title>
<line class="axis" x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}"/>
<line class="axis" x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{HEIGHT - PAD}"/>
<text x="{PAD - 6}" y="{PAD + 4}" text-anchor="end">{top:,}</text>
<text x="{PAD - 6}" y="{HEIGHT - PAD + 4}" text-anchor="end">0</text>
<text x="{PAD}" y="{HEIGHT - PAD + 18}">{e(first.strftime("%Y-%m-%d %H:%M"))}</text>
<text x="{WIDTH - PAD}" y="{HEIGHT - PAD + 18}" text-anchor="end">{e(last.strftime("%Y-%m-%d %H:%M"))}</text>
<text x="{WIDTH / 2:.0f}" y="{HEIGHT - 8}" text-anchor="middle">request 1 to {len(points)}</text>
<polyline class="client" points="{line([p.client_tokens for p in points])}"/>
<polyline class="memctx" points="{line([p.context_tokens for p in points])}"/>
</svg><figcaption><span class="key client"></span> the client's request
<span class="key memctx"></span> what memctx would have sent (tokens per request)</figcaption></figure>"""
