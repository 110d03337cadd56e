-- API keys: stored as SHA-256 hashes; looked up with the service role (before the caller is known).

-- name: insert_api_key
insert into memctx.api_keys (user_id, name, prefix, key_hash)
values (%(user_id)s, %(name)s, %(prefix)s, %(key_hash)s)
returning id, user_id, name, prefix, created_at, revoked_at

-- name: list_api_keys
select id, user_id, name, prefix, created_at, revoked_at from memctx.api_keys
 where user_id = %(user_id)s
 order by created_at, id

-- name: revoke_api_key
update memctx.api_keys set revoked_at = now()
 where id = %(id)s and revoked_at is null
returning id, user_id, name, prefix, created_at, revoked_at

-- name: api_key_user
select user_id from memctx.api_keys where key_hash = %(key_hash)s and revoked_at is null
