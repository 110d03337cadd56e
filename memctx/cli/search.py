"""CLI command of external search, registered on the main `memctx` app by memctx.cli.

`memctx search-web "QUERY" [--json] [--force] [--no-cache]` prints the decision and its reason,
the engine that answered, each result's title, URL and cleaned text. JSON goes to stdout;
errors go to stderr.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Optional
from uuid import UUID

import typer

from memctx.cli.common import USER_HELP, err, fail, user_id

if TYPE_CHECKING:
    from memctx.web import SearchReport, WebSearch


def search_web_cmd(query: str = typer.Argument(..., help="the question, as a user would ask it"),
                   as_json: bool = typer.Option(False, "--json", help="print the report as JSON"),
                   force: bool = typer.Option(False, "--force", help="search even if the decision is no"),
                   no_cache: bool = typer.Option(False, "--no-cache", help="no database: neither read nor "
                                                                            "write the search cache"),
                   user: Optional[str] = typer.Option(None, help=USER_HELP)) -> None:
    """Decide whether QUERY needs the web and, if so (or with --force), search, fetch and clean."""
    from memctx.config import Settings
    from memctx.web import WebSearch
    from memctx.tokens import get_counter

    settings = Settings()
    owner = user_id(user)
    if not settings.web_engines:
        fail("external search is off: set MEMCTX_WEB_ENGINES (and e.g. MEMCTX_SEARXNG_URL)")
    if no_cache:
        report = _search(WebSearch.from_settings(settings, get_counter(settings.token_encoding)), query, owner, force)
    else:
        from memctx.app import open_app

        with open_app(settings) as memctx_app:
            report = _search(WebSearch.from_settings(settings, memctx_app.counter, memctx_app.pool), query, owner,
                             force)
    if as_json:
        print(json.dumps(report.as_json(), ensure_ascii=False))
        return
    decision = report.decision
    print(f"decision: {'search' if decision.search else 'no search'} ({decision.by}): {decision.reason}")
    if report.query is not None:
        print(f"query sent: {report.query}")
        print(f"engine: {report.engine or 'none answered'}" + (" (cached)" if report.cached else ""))
    for i, result in enumerate(report.results, 1):
        print(f"\n[{i}] {result.title}\n{result.url}" + ("" if result.fetched else " (snippet only)"))
        print(result.text)
    for error in report.errors:
        err.print(f"warning: {error}", highlight=False, markup=False)


def _search(web: "WebSearch", query: str, owner: UUID, force: bool) -> "SearchReport":
    from memctx.web import SearchReport

    decision = web.decide(query)
    if not (decision.search or force):
        return SearchReport(decision)
    return web.run(query, decision, user=owner)


def register(app: typer.Typer) -> None:
    """Add this layer's commands to the main app."""
    app.command("search-web")(search_web_cmd)
