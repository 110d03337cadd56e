"""A web page's readable text: the article, without the page around it, cut to a token cap.

Owns: cleaning HTML with selectolax (lexbor). Drops scripts, styles, navigation, headers,
footers, asides, forms, hidden elements and cookie banners; prefers the main or article content;
keeps headings, paragraphs, list items and quotes as lines, whitespace collapsed; cuts on a
sentence boundary to the token cap; keeps the title and URL for citation. Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from selectolax.lexbor import LexborHTMLParser, LexborNode

from memctx.tokens import TokenCounter
from memctx.words import split_sentences, words

DROP_TAGS = ("script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed", "nav",
             "header", "footer", "aside", "form", "button", "input", "select", "textarea", "dialog", "menu")
DROP_SELECTORS = ("[hidden]", "[aria-hidden=true]", "[role=navigation]", "[role=banner]", "[role=contentinfo]",
                  "[role=complementary]", "[role=dialog]", "[role=alertdialog]", "[style*='display:none']",
                  "[style*='display: none']", "[style*='visibility:hidden']")
# id or class words of boilerplate blocks (cookie banners, share bars, ads, related links...)
BOILERPLATE = {"cookie", "cookies", "consent", "gdpr", "banner", "newsletter", "subscribe", "subscription",
               "promo", "advert", "advertisement", "ad", "ads", "sponsored", "share", "sharing", "social",
               "related", "recommended", "comments", "comment", "sidebar", "breadcrumb", "breadcrumbs", "popup",
               "modal", "paywall", "signup", "menu", "navbar", "toolbar", "skip", "sr-only", "visually-hidden"}
KEEP_TAGS = {"html", "body", "main", "article"}
BLOCKS = "h1, h2, h3, h4, h5, h6, p, li, blockquote, pre, dt, dd, figcaption, td"
_SPACE = re.compile(r"\s+")
MIN_MAIN_CHARS = 200  # a <main> or <article> shorter than this is a teaser, not the content


@dataclass(frozen=True)
class CleanPage:
    title: str
    url: str
    text: str


def clean_html(html: str, url: str, counter: TokenCounter, max_tokens: int) -> CleanPage:
    """The title and the readable text of `html`, at most `max_tokens` tokens of text."""
    tree = LexborHTMLParser(html)
    title = _title(tree)
    _drop_boilerplate(tree)
    root = _content_root(tree)
    lines = _lines(root) if root is not None else []
    return CleanPage(title=title or url, url=url, text=cut(lines, counter, max_tokens))


def _title(tree: LexborHTMLParser) -> str:
    for selector, attr in (("meta[property='og:title']", "content"), ("title", None), ("h1", None)):
        node = tree.css_first(selector)
        if node is not None:
            text = node.attributes.get(attr) if attr else node.text(deep=True)
            if text and text.strip():
                return _SPACE.sub(" ", text).strip()
    return ""


def _drop_boilerplate(tree: LexborHTMLParser) -> None:
    for tag in DROP_TAGS:
        for node in tree.css(tag):
            node.decompose()
    for selector in DROP_SELECTORS:
        for node in tree.css(selector):
            node.decompose()
    for node in tree.css("[class], [id]"):
        if node.tag in KEEP_TAGS:
            continue
        named = f"{node.attributes.get('class') or ''} {node.attributes.get('id') or ''}".lower()
        if (set(named.split()) | set(words(named))) & BOILERPLATE:  # "sr-only" whole, "cookie-banner" by word
            node.decompose()


def _content_root(tree: LexborHTMLParser) -> LexborNode | None:
    for selector in ("article", "main", "[role=main]"):
        candidates = tree.css(selector)
        if candidates:
            best = max(candidates, key=lambda n: len(n.text(deep=True, strip=True)))
            if len(best.text(deep=True, strip=True)) >= MIN_MAIN_CHARS:
                return best
    return tree.body


def _lines(root: LexborNode) -> list[str]:
    lines: list[str] = []
    for node in root.css(BLOCKS):
        if node.tag in ("li", "blockquote", "td", "dd") and any(
                inner.mem_id != node.mem_id for inner in node.css("p, li, blockquote, pre, table")):
            continue  # its paragraphs are lines of their own (lexbor's css() includes the node itself)
        text = _SPACE.sub(" ", node.text(deep=True)).strip()
        if text and (not lines or lines[-1] != text):
            lines.append(text)
    if not lines:
        text = _SPACE.sub(" ", root.text(deep=True, separator=" ")).strip()
        lines = [text] if text else []
    return lines


def cut(lines: list[str], counter: TokenCounter, max_tokens: int) -> str:
    """`lines` joined by newlines, the longest prefix of whole sentences within `max_tokens`."""
    kept: list[str] = []
    used = 0
    for line in lines:
        cost = counter.count(line) + 1
        if used + cost <= max_tokens:
            kept.append(line)
            used += cost
            continue
        part: list[str] = []
        for sentence in split_sentences(line):
            c = counter.count(" ".join([*part, sentence])) + 1
            if used + c > max_tokens:
                break
            part.append(sentence)
        if part:
            kept.append(" ".join(part))
        elif not kept:  # not even one sentence fits: the start of it, marked as cut
            kept.append(counter.truncate(line, max(1, max_tokens - 2)).rstrip() + "…")
        break
    return "\n".join(kept)
