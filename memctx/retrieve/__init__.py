"""Memory search: hybrid (dense + full text + recency) retrieval fused by weighted RRF."""

from memctx.retrieve.fusion import FusionWeights, fuse, rrf
from memctx.retrieve.rerank import NoRerank, Reranker, TermOverlapReranker
from memctx.retrieve.search import MemorySearch, SearchOptions, search_memories
from memctx.retrieve.types import Fragment, Memory, Provenance

__all__ = ["Fragment", "FusionWeights", "Memory", "MemorySearch", "NoRerank", "Provenance", "Reranker",
           "SearchOptions", "TermOverlapReranker", "fuse", "rrf", "search_memories"]
