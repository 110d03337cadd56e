-- The external search cache (0010). Run as the caller where there is one: RLS keeps each user's
-- rows to that user.

-- name: search_cache_get
-- A cached answer still within its TTL.
select engine, cleaned
  from memctx.search_cache
 where user_id = %(user_id)s and fingerprint = %(fingerprint)s
   and fetched_at > now() - make_interval(secs => %(ttl_s)s)

-- name: search_cache_put
-- Store (or refresh) an answer, and delete the user's expired rows (an index range: usually none).
-- The answer of a search made for a conversation is stored only while that conversation exists:
-- after lock_user, a user forgotten while the search ran (forget_user takes the same
-- lock) leaves no row behind.
with pruned as (
  delete from memctx.search_cache
   where user_id = %(user_id)s and fingerprint <> %(fingerprint)s
     and fetched_at <= now() - make_interval(secs => %(ttl_s)s)
)
insert into memctx.search_cache (user_id, fingerprint, query, engine, results, cleaned)
select %(user_id)s, %(fingerprint)s, %(query)s, %(engine)s, %(results)s, %(cleaned)s
 where %(conversation_id)s::uuid is null
    or exists (select 1 from memctx.conversations
                where id = %(conversation_id)s::uuid and user_id = %(user_id)s)
on conflict (user_id, fingerprint) do update
   set query = excluded.query, engine = excluded.engine, results = excluded.results,
       cleaned = excluded.cleaned, fetched_at = now()
