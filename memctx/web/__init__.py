"""External search: decide whether a query needs the web, search, fetch, clean, cache.

`WebSearch` (service.py) is what the context assembler and `memctx search-web` call; engines
(engines.py) sit behind the `SearchEngine` protocol. Off unless an engine is configured.
"""

from memctx.web.engines import EngineChain, SearchEngine, make_engines
from memctx.web.service import WebSearch, WebSearchOptions
from memctx.web.types import Decision, Hit, SearchFailed, SearchReport, WebResult

__all__ = ["Decision", "EngineChain", "Hit", "SearchEngine", "SearchFailed", "SearchReport", "WebResult",
           "WebSearch", "WebSearchOptions", "make_engines"]
