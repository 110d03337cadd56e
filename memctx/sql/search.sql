-- The external search cache (0010). Run as the caller where there is one: RLS keeps each user's
-- rows to that user.
--
-- A search that misses the cache claims its fingerprint first: a row with no engine yet, written
-- under the user's lock (forget_user takes the same lock and deletes every row of the user). The
-- answer is then stored by filling the claim in, never by an insert: a user forgotten while the
-- search ran has lost the claim, so the answer finds no row to land in and nothing of them is left.

-- name: search_cache_get
-- A cached answer still within its TTL (a claim, engine '', is a search still running: no answer).
select engine, cleaned
  from memctx.search_cache
 where user_id = %(user_id)s and fingerprint = %(fingerprint)s and engine <> ''
   and fetched_at > now() - make_interval(secs => %(ttl_s)s)

-- name: search_cache_claim
-- After lock_user: claim the fingerprint for a search about to run (an expired answer under it
-- becomes the claim), and delete the user's other expired rows (an index range: usually none;
-- a claim older than the TTL is a search that died). A search made for a conversation claims only
-- while that conversation exists. Returns the claim (no row: nothing may be cached).
with pruned as (
  delete from memctx.search_cache
   where user_id = %(user_id)s and fingerprint <> %(fingerprint)s
     and fetched_at <= now() - make_interval(secs => %(ttl_s)s)
)
insert into memctx.search_cache (user_id, fingerprint, query, engine, results, cleaned)
select %(user_id)s, %(fingerprint)s, %(query)s, '', '[]', '[]'
 where %(conversation_id)s::uuid is null
    or exists (select 1 from memctx.conversations
                where id = %(conversation_id)s::uuid and user_id = %(user_id)s)
on conflict (user_id, fingerprint) do update
   set query = excluded.query, engine = '', results = '[]', cleaned = '[]', fetched_at = now()
returning fingerprint

-- name: search_cache_put
-- Fill the claim in with the answer. No claim (the user was forgotten while the search ran, or
-- the claim was refused): no row, and nothing is stored.
update memctx.search_cache
   set query = %(query)s, engine = %(engine)s, results = %(results)s, cleaned = %(cleaned)s, fetched_at = now()
 where user_id = %(user_id)s and fingerprint = %(fingerprint)s

-- name: search_cache_release
-- A claim whose search found nothing to cache.
delete from memctx.search_cache
 where user_id = %(user_id)s and fingerprint = %(fingerprint)s and engine = ''
