"""memctx's HTML cleaner against trafilatura's extraction, as a reference (never a dependency).

    python3 -m venv /tmp/trafi && /tmp/trafi/bin/pip install trafilatura lxml_html_clean
    .venv/bin/python bench/clean_reference.py --trafilatura-python /tmp/trafi/bin/python

On each article page of tests/fixtures/web/, both extractions are scored by token F1 (bag of
lowercased words) against the page's true article text: the fixture's own body elements, named
by the selectors in GOLD (headings, paragraphs and list items of the article; not the byline,
share bar, newsletter box, comments or hidden blocks). trafilatura runs in its own interpreter
(a throwaway venv), fed the pages on stdin; memctx's cleaner runs here with no token cap.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from selectolax.lexbor import LexborHTMLParser  # noqa: E402

from memctx.web.clean import clean_html  # noqa: E402
from memctx.tokens import get_counter  # noqa: E402

WEB = ROOT / "tests" / "fixtures" / "web"
# page → the selectors of its true article text, in document order
GOLD = {
    "news-article.html": "article > h1, article > h2, article > p:not(.byline), article > ul > li",
    "blog-post.html": ".content-area > h1, .entry-content > p, .entry-content > h3",
}
TRAFILATURA = """
import json, sys, trafilatura
pages = json.load(sys.stdin)
print(json.dumps({"version": trafilatura.__version__,
                  "texts": {n: trafilatura.extract(h, include_comments=False) or "" for n, h in pages.items()}}))
"""


def words(text: str) -> Counter:
    return Counter(re.findall(r"\w+", text.lower()))


def f1(found: str, gold: str) -> dict:
    got, want = words(found), words(gold)
    common = sum((got & want).values())
    precision = common / max(sum(got.values()), 1)
    recall = common / max(sum(want.values()), 1)
    return {"precision": round(precision, 3), "recall": round(recall, 3),
            "f1": round(2 * precision * recall / (precision + recall), 3) if common else 0.0}


def gold_text(html: str, selectors: str) -> str:
    return "\n".join(node.text(deep=True) for node in LexborHTMLParser(html).css(selectors))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trafilatura-python", required=True, help="an interpreter with trafilatura installed")
    args = parser.parse_args()
    pages = {name: (WEB / name).read_text() for name in GOLD}
    done = subprocess.run([args.trafilatura_python, "-c", TRAFILATURA], input=json.dumps(pages), text=True,
                          capture_output=True, check=True)
    reference = json.loads(done.stdout)
    counter = get_counter("cl100k_base")
    rows = {}
    for name, html in pages.items():
        gold = gold_text(html, GOLD[name])
        ours = clean_html(html, name, counter, 100_000).text
        rows[name] = {"gold_words": sum(words(gold).values()), "memctx": f1(ours, gold),
                      "trafilatura": f1(reference["texts"][name], gold)}
    print(json.dumps({"trafilatura": reference["version"], "pages": rows}, indent=2))


if __name__ == "__main__":
    main()
