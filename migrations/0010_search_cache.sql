-- memctx 0010: the external search cache (memctx/search/cache.py).
--
-- One row per user and query fingerprint (a SHA-256 of the anonymized query as it was sent and of
-- the settings that shape the answer): the engine that answered, its hits, and the cleaned text
-- of each page. A repeated question within MEMCTX_SEARCH_CACHE_TTL_S is answered from here; the
-- user's expired rows are deleted by the next insert.
--
-- Per tenant, not shared: the anonymized query can still say something personal (a name that is
-- not a speaker, an illness, a place), and a shared cache would let one user learn what another
-- asked (a hit is faster) or plant results for them. So the row belongs to its user like every
-- other table: RLS as the caller, and forgetting a user deletes it. It hangs off no conversation:
-- the same question in two conversations of a user is one search.

create table memctx.search_cache (
  user_id uuid not null,
  fingerprint text not null check (fingerprint ~ '^[0-9a-f]{64}$'),
  -- the anonymized query as it was sent (never the user's original text)
  query text not null,
  engine text not null,
  -- the engine's hits: [{title, url, snippet}]
  results jsonb not null check (jsonb_typeof(results) = 'array'),
  -- the cleaned text of each page: [{title, url, text, fetched, note}]
  cleaned jsonb not null check (jsonb_typeof(cleaned) = 'array'),
  fetched_at timestamptz not null default now(),
  primary key (user_id, fingerprint)
);
create index search_cache_fetched_idx on memctx.search_cache (user_id, fetched_at);

alter table memctx.search_cache enable row level security;
create policy search_cache_owner on memctx.search_cache for all to authenticated
  using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));
grant select, insert, update, delete on memctx.search_cache to authenticated, service_role;
