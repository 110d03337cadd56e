-- memctx 0007: API keys, the credentials of the HTTP API (`memctx keys create|list|revoke`).
--
-- A key is shown once, when it is made; the table keeps only its SHA-256 (a key is 256 random
-- bits, so a plain hash is enough) and a short prefix to recognize it in a list. The API looks a
-- key up with the service role, before it knows who calls; `authenticated` sees only its own keys'
-- names and dates, never a hash, and may delete them (forgetting a user deletes its keys too).

create table memctx.api_keys (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null,
  name text,
  prefix text not null,
  key_hash text not null unique check (key_hash ~ '^[0-9a-f]{64}$'),
  created_at timestamptz not null default now(),
  revoked_at timestamptz
);
create index api_keys_user_idx on memctx.api_keys (user_id);

alter table memctx.api_keys enable row level security;
create policy api_keys_owner on memctx.api_keys for all to authenticated
  using (user_id = (select auth.uid()));
grant select, insert, update, delete on memctx.api_keys to service_role;
grant select (id, user_id, name, prefix, created_at, revoked_at), delete on memctx.api_keys to authenticated;
