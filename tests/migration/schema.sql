-- The schema that migrations/ builds, as pg_dump prints it. Generated: do not edit by hand.
--
-- migrations/ is the only source of schema truth; this file is what they add up to on plain
-- PostgreSQL after `memctx migrate` with the default embedder (all-MiniLM-L6-v2-int8, 384
-- dimensions; the vector columns' dimension and the HNSW indexes come from
-- memctx.configure_embedding_space at migrate time). No memctx database is ever built from it.
-- tests/migration/test_schema_snapshot.py builds one database from the migrations and one from
-- this file and fails on any difference, so every change a migration makes to the schema is
-- reviewed here as a diff.
--
-- Regenerate: .venv/bin/python scripts/schema_snapshot.py

-- Roles belong to the cluster, so pg_dump leaves them out; 0001 creates them where Supabase has not.
do $$
begin
  if not exists (select 1 from pg_roles where rolname = 'anon') then
    create role anon nologin noinherit;
  end if;
  if not exists (select 1 from pg_roles where rolname = 'authenticated') then
    create role authenticated nologin noinherit;
  end if;
  if not exists (select 1 from pg_roles where rolname = 'service_role') then
    create role service_role nologin noinherit bypassrls;
  end if;
end
$$;

--
-- PostgreSQL database dump
--


SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: auth; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA auth;


--
-- Name: memctx; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA memctx;


--
-- Name: memctx_queue; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA memctx_queue;


--
-- Name: vector; Type: EXTENSION; Schema: -; Owner: -
--

CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public;


--
-- Name: EXTENSION vector; Type: COMMENT; Schema: -; Owner: -
--

COMMENT ON EXTENSION vector IS 'vector data type and ivfflat and hnsw access methods';


--
-- Name: state; Type: TYPE; Schema: memctx_queue; Owner: -
--

CREATE TYPE memctx_queue.state AS ENUM (
    'queued',
    'consumed',
    'rejected'
);


--
-- Name: uid(); Type: FUNCTION; Schema: auth; Owner: -
--

CREATE FUNCTION auth.uid() RETURNS uuid
    LANGUAGE sql STABLE
    AS $$
        select coalesce(
          nullif(current_setting('request.jwt.claim.sub', true), ''),
          nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub'
        )::uuid
      $$;


--
-- Name: block_field_text(jsonb, text); Type: FUNCTION; Schema: memctx; Owner: -
--

CREATE FUNCTION memctx.block_field_text(value jsonb, missing text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO ''
    AS $$
  select case when value is null or jsonb_typeof(value) = 'null' then missing
              when jsonb_typeof(value) = 'string' then value #>> '{}'
              else value::text end
$$;


--
-- Name: configure_embedding_space(text, integer); Type: FUNCTION; Schema: memctx; Owner: -
--

CREATE FUNCTION memctx.configure_embedding_space(p_model text, p_dim integer) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'memctx', 'public', 'extensions'
    AS $$
declare
  current_space memctx.embedding_space;
  tbl text;
  storage text;
begin
  select * into current_space from memctx.embedding_space for update;
  if found then
    if current_space.model <> p_model or current_space.dim <> p_dim then
      raise exception using
        errcode = 'invalid_parameter_value',
        message = format('database holds %s-dimensional embeddings of model %s; the configured embedder is %s with %s dimensions',
                         current_space.dim, current_space.model, p_model, p_dim),
        hint = 'configure the same embedder, or re-embed into a new database';
    end if;
    return;
  end if;
  -- Small vectors stay in the row (an exact scan then reads no TOAST); large ones may move out.
  storage := case when p_dim <= 512 then 'plain' else 'main' end;
  foreach tbl in array array['messages', 'summaries', 'working_memory_chunks', 'conversation_summaries'] loop
    execute format('alter table memctx.%I alter column embedding type vector(%s)', tbl, p_dim);
    execute format('alter table memctx.%I alter column embedding set storage %s', tbl, storage);
    if p_dim <= 2000 then
      execute format('create index %I on memctx.%I using hnsw (embedding vector_cosine_ops) with (m = 16, ef_construction = 64)',
                     tbl || '_embedding_hnsw', tbl);
    end if;
  end loop;
  insert into memctx.embedding_space (model, dim) values (p_model, p_dim);
end
$$;


--
-- Name: message_codes_write(); Type: FUNCTION; Schema: memctx; Owner: -
--

CREATE FUNCTION memctx.message_codes_write() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
    begin
      delete from memctx.message_codes c
       using new_rows r
       where c.message_id = r.id and c.user_id = r.user_id and r.embedding is null;
      insert into memctx.message_codes as c (message_id, user_id, conversation_id, created_at, bits)
      select r.id, r.user_id, r.conversation_id, r.created_at, binary_quantize(r.embedding)::varbit
        from new_rows r
       where r.embedding is not null
          on conflict (message_id, user_id) do update
         set conversation_id = excluded.conversation_id, created_at = excluded.created_at, bits = excluded.bits
       where (c.conversation_id, c.created_at, c.bits) is distinct from
             (excluded.conversation_id, excluded.created_at, excluded.bits);
      return null;
    end
    $$;


--
-- Name: message_terms_insert(); Type: FUNCTION; Schema: memctx; Owner: -
--

CREATE FUNCTION memctx.message_terms_insert() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO ''
    AS $$
begin
  insert into memctx.message_terms (message_id, user_id, conversation_id, seq, created_at, lexemes, tsv)
  select r.id, r.user_id, r.conversation_id, r.seq, r.created_at, coalesce(r.lexemes, pg_catalog.length(r.tsv)), r.tsv
    from new_rows r
   where r.tsv <> ''::pg_catalog.tsvector;
  return null;
end
$$;


--
-- Name: message_terms_update(); Type: FUNCTION; Schema: memctx; Owner: -
--

CREATE FUNCTION memctx.message_terms_update() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO ''
    AS $$
begin
  if new.tsv = ''::pg_catalog.tsvector then
    delete from memctx.message_terms t where t.message_id = new.id and t.user_id = new.user_id;
  else
    insert into memctx.message_terms as t (message_id, user_id, conversation_id, seq, created_at, lexemes, tsv)
    values (new.id, new.user_id, new.conversation_id, new.seq, new.created_at,
            coalesce(new.lexemes, pg_catalog.length(new.tsv)), new.tsv)
        on conflict (message_id, user_id) do update
       set conversation_id = excluded.conversation_id, seq = excluded.seq, created_at = excluded.created_at,
           lexemes = excluded.lexemes, tsv = excluded.tsv;
  end if;
  return null;
end
$$;


--
-- Name: message_text(jsonb); Type: FUNCTION; Schema: memctx; Owner: -
--

CREATE FUNCTION memctx.message_text(content jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO ''
    AS $$
  select memctx.trim_space(coalesce(string_agg(p.part, E'\n' order by b.n) filter (where p.part <> ''), ''))
    from jsonb_array_elements(case when jsonb_typeof(content) = 'array' then content else '[]'::jsonb end)
         with ordinality as b(block, n)
   cross join lateral (
     select case b.block ->> 'type'
              when 'text' then memctx.block_field_text(b.block -> 'text', '')
              when 'image' then nullif('[image: ' || memctx.block_field_text(b.block -> 'caption', '') || ']',
                                       '[image: ]')
              when 'tool_call' then '[tool call ' || memctx.block_field_text(b.block -> 'name', '?') || '('
                                    || memctx.block_field_text(b.block -> 'arguments', '{}') || ')]'
              when 'tool_result' then memctx.block_field_text(b.block -> 'content', '')
            end as part
   ) p
$$;


--
-- Name: message_tsv(text, timestamp with time zone); Type: FUNCTION; Schema: memctx; Owner: -
--

CREATE FUNCTION memctx.message_tsv(body text, said timestamp with time zone) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN (to_tsvector('english'::regconfig, body) || CASE WHEN (body <> ''::text) THEN to_tsvector('simple'::regconfig, to_char((said AT TIME ZONE 'UTC'::text), '"m"YYYYMM "m"MM "d"YYYYMMDD'::text)) ELSE ''::tsvector END);


--
-- Name: messages_assign_seq(); Type: FUNCTION; Schema: memctx; Owner: -
--

CREATE FUNCTION memctx.messages_assign_seq() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
declare
  conv record;
  stored bigint;
begin
  if new.user_id is null then
    select c.last_seq, c.user_id into conv
      from memctx.conversations c
     where c.id = new.conversation_id
       for update;
  else
    select c.last_seq, c.user_id into conv
      from memctx.conversations c
     where c.id = new.conversation_id and c.user_id = new.user_id
       for update;
  end if;
  if not found then
    raise foreign_key_violation using
      message = format('conversation %s does not exist%s', new.conversation_id,
                       coalesce(' for user ' || new.user_id::text, ''));
  end if;
  new.user_id := conv.user_id;
  select m.seq into stored
    from memctx.messages m
   where m.conversation_id = new.conversation_id and m.user_id = conv.user_id
   order by m.seq desc
   limit 1;
  new.seq := greatest(conv.last_seq, coalesce(stored, 0)) + 1;
  return new;
end
$$;


--
-- Name: messages_check_block_fields(); Type: FUNCTION; Schema: memctx; Owner: -
--

CREATE FUNCTION memctx.messages_check_block_fields() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
declare
  bad record;
begin
  if jsonb_typeof(new.content) = 'array' then
    select b.n - 1 as i, f.key, case jsonb_typeof(b.block -> f.key) when 'object' then 'an object'
                                  when 'array' then 'a list' when 'number' then 'a number'
                                  else 'a boolean' end as kind into bad
      from jsonb_array_elements(new.content) with ordinality as b(block, n)
      join (values ('text', 'text'), ('image', 'url'), ('image', 'caption'), ('tool_call', 'id'),
                   ('tool_call', 'name'), ('tool_result', 'tool_call_id'), ('thinking', 'text')) as f(type, key)
        on jsonb_typeof(b.block) = 'object' and f.type = b.block ->> 'type'
     where jsonb_typeof(b.block -> f.key) not in ('string', 'null')
     order by b.n, f.key
     limit 1;
    if found then
      raise check_violation using
        message = format('block %s %s must be a string, got %s', bad.i, bad.key, bad.kind),
        table = 'messages', column = 'content';
    end if;
  end if;
  return new;
end
$$;


--
-- Name: messages_count(); Type: FUNCTION; Schema: memctx; Owner: -
--

CREATE FUNCTION memctx.messages_count() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
begin
  update memctx.conversations c
     set last_seq = greatest(c.last_seq, n.last_seq),
         message_count = c.message_count + n.added,
         lexeme_count = c.lexeme_count + n.lexemes,
         last_message_at = greatest(coalesce(c.last_message_at, n.last_at), n.last_at),
         speakers = case when n.speakers <@ c.speakers then c.speakers
                         else array(select distinct s from pg_catalog.unnest(c.speakers || n.speakers) as s order by s) end
    from (select r.conversation_id, r.user_id, max(r.seq) as last_seq, count(*) as added,
                 coalesce(sum(r.lexemes), 0) as lexemes, max(r.created_at) as last_at,
                 coalesce(array_agg(distinct r.metadata ->> 'speaker') filter (where r.metadata ->> 'speaker' <> ''),
                          '{}') as speakers
            from new_rows r
           group by r.conversation_id, r.user_id) n
   where c.id = n.conversation_id
     and c.user_id = n.user_id;
  return null;
end
$$;


--
-- Name: messages_derive_text(); Type: FUNCTION; Schema: memctx; Owner: -
--

CREATE FUNCTION memctx.messages_derive_text() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
declare
  bad record;
begin
  if (tg_op = 'INSERT' or new.content is distinct from old.content) and jsonb_typeof(new.content) = 'array' then
    select b.n - 1 as i, coalesce((b.block -> 'type')::text, jsonb_typeof(b.block)) as kind into bad
      from jsonb_array_elements(new.content) with ordinality as b(block, n)
     where jsonb_typeof(b.block) <> 'object'
        or coalesce(b.block ->> 'type', '') not in ('text', 'image', 'tool_call', 'tool_result', 'thinking')
     order by b.n
     limit 1;
    if found then
      raise check_violation using
        message = format('block %s has unknown type %s (known: text, image, tool_call, tool_result, thinking)',
                         bad.i, bad.kind),
        table = 'messages', column = 'content';
    end if;
  end if;
  if new.text is null or memctx.trim_space(new.text) = '' then
    new.text := memctx.message_text(new.content);
  elsif tg_op = 'UPDATE' and new.content is distinct from old.content and new.text = old.text
        and old.text = memctx.message_text(old.content) then
    new.text := memctx.message_text(new.content);
  end if;
  if new.text = '' then
    new.embedding := null;
    new.token_count := 0;
  elsif tg_op = 'UPDATE' and new.text <> old.text then
    -- (compared as text: pgvector's operators live in a schema this function does not search)
    if new.embedding::text is not distinct from old.embedding::text then
      new.embedding := null;
    end if;
    if new.token_count is not distinct from old.token_count then
      new.token_count := null;
    end if;
  end if;
  return new;
end
$$;


--
-- Name: messages_drop_passages(); Type: FUNCTION; Schema: memctx; Owner: -
--

CREATE FUNCTION memctx.messages_drop_passages() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
begin
  delete from memctx.working_memory_chunks p
   where p.message_id = new.id and p.user_id = new.user_id;
  return null;
end
$$;


--
-- Name: messages_enqueue(); Type: FUNCTION; Schema: memctx; Owner: -
--

CREATE FUNCTION memctx.messages_enqueue() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
declare
  conv record;
begin
  insert into memctx.outbox (user_id, conversation_id, kind, message_id, seq)
  select n.user_id, n.conversation_id, 'message', n.id, n.seq from new_rows n order by n.seq;
  for conv in select distinct n.conversation_id from new_rows n loop
    perform pg_notify('memctx_outbox', conv.conversation_id::text);
  end loop;
  return null;
end
$$;


--
-- Name: messages_lexemes(); Type: FUNCTION; Schema: memctx; Owner: -
--

CREATE FUNCTION memctx.messages_lexemes() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
begin
  if tg_op = 'UPDATE' and old.lexemes is not null
     and new.text is not distinct from old.text and new.created_at is not distinct from old.created_at then
    new.lexemes := old.lexemes;
  else
    new.lexemes := pg_catalog.length(memctx.message_tsv(new.text, new.created_at));
  end if;
  return new;
end
$$;


--
-- Name: procedure_sources_gone(); Type: FUNCTION; Schema: memctx; Owner: -
--

CREATE FUNCTION memctx.procedure_sources_gone() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO ''
    AS $$
begin
  delete from memctx.procedures p
   where p.id = old.procedure_id and p.user_id = old.user_id
     and not exists (select 1 from memctx.procedure_sources s
                      where s.procedure_id = old.procedure_id and s.user_id = old.user_id);
  return null;
end
$$;


--
-- Name: profile_item_gone(); Type: FUNCTION; Schema: memctx; Owner: -
--

CREATE FUNCTION memctx.profile_item_gone() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO ''
    AS $$
begin
  update memctx.profile_items i
     set status = 'active', replaced_by = null, replaced_at = null, updated_at = now()
   where i.replaced_by = old.id and i.user_id = old.user_id and i.status = 'replaced';
  return null;
end
$$;


--
-- Name: profile_sources_gone(); Type: FUNCTION; Schema: memctx; Owner: -
--

CREATE FUNCTION memctx.profile_sources_gone() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO ''
    AS $$
begin
  delete from memctx.profile_items i
   where i.id = old.item_id and i.user_id = old.user_id and i.origin = 'learned'
     and not exists (select 1 from memctx.profile_sources s
                      where s.item_id = old.item_id and s.user_id = old.user_id);
  update memctx.profile_items i
     set seen_count = (select count(*) from memctx.profile_sources s
                        where s.item_id = old.item_id and s.user_id = old.user_id)
   where i.id = old.item_id and i.user_id = old.user_id;
  return null;
end
$$;


--
-- Name: trim_space(text); Type: FUNCTION; Schema: memctx; Owner: -
--

CREATE FUNCTION memctx.trim_space(value text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO ''
    AS $$
  select pg_catalog.btrim(value,
    chr(9) || chr(10) || chr(11) || chr(12) || chr(13) || chr(28) || chr(29) || chr(30) || chr(31) ||
    chr(32) || chr(133) || chr(160) || chr(5760) || chr(8192) || chr(8193) || chr(8194) || chr(8195) ||
    chr(8196) || chr(8197) || chr(8198) || chr(8199) || chr(8200) || chr(8201) || chr(8202) ||
    chr(8232) || chr(8233) || chr(8239) || chr(8287) || chr(12288))
$$;


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: api_keys; Type: TABLE; Schema: memctx; Owner: -
--

CREATE TABLE memctx.api_keys (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    user_id uuid NOT NULL,
    name text,
    prefix text NOT NULL,
    key_hash text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    revoked_at timestamp with time zone,
    CONSTRAINT api_keys_key_hash_check CHECK ((key_hash ~ '^[0-9a-f]{64}$'::text))
);


--
-- Name: context_requests; Type: TABLE; Schema: memctx; Owner: -
--

CREATE TABLE memctx.context_requests (
    id bigint NOT NULL,
    user_id uuid NOT NULL,
    conversation_id uuid NOT NULL,
    kind text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    model text,
    token_budget integer NOT NULL,
    tokens_used integer NOT NULL,
    full_history_tokens bigint NOT NULL,
    timings_ms jsonb DEFAULT '{}'::jsonb NOT NULL,
    sources jsonb DEFAULT '{}'::jsonb NOT NULL,
    upstream_status smallint,
    CONSTRAINT context_requests_full_history_tokens_check CHECK ((full_history_tokens >= 0)),
    CONSTRAINT context_requests_kind_check CHECK ((kind = ANY (ARRAY['context'::text, 'proxy'::text, 'shadow'::text]))),
    CONSTRAINT context_requests_sources_check CHECK ((jsonb_typeof(sources) = 'object'::text)),
    CONSTRAINT context_requests_timings_ms_check CHECK ((jsonb_typeof(timings_ms) = 'object'::text)),
    CONSTRAINT context_requests_token_budget_check CHECK ((token_budget >= 0)),
    CONSTRAINT context_requests_tokens_used_check CHECK ((tokens_used >= 0))
);


--
-- Name: context_requests_id_seq; Type: SEQUENCE; Schema: memctx; Owner: -
--

ALTER TABLE memctx.context_requests ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME memctx.context_requests_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: conversations; Type: TABLE; Schema: memctx; Owner: -
--

CREATE TABLE memctx.conversations (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    user_id uuid NOT NULL,
    external_id text,
    title text,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    message_count integer DEFAULT 0 NOT NULL,
    last_seq bigint DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    last_message_at timestamp with time zone,
    closed_at timestamp with time zone,
    lexeme_count bigint DEFAULT 0 NOT NULL,
    speakers text[] DEFAULT '{}'::text[] NOT NULL,
    proxy_mode text,
    CONSTRAINT conversations_proxy_mode_check CHECK ((proxy_mode = ANY (ARRAY['live'::text, 'shadow'::text])))
);


--
-- Name: messages; Type: TABLE; Schema: memctx; Owner: -
--

CREATE TABLE memctx.messages (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    conversation_id uuid NOT NULL,
    user_id uuid NOT NULL,
    seq bigint NOT NULL,
    role text NOT NULL,
    content jsonb DEFAULT '[]'::jsonb NOT NULL,
    text text DEFAULT ''::text NOT NULL,
    external_id text,
    token_count integer,
    embedding public.vector(384),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    inserted_at timestamp with time zone DEFAULT now() NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    tsv tsvector GENERATED ALWAYS AS (memctx.message_tsv(text, created_at)) STORED,
    lexemes integer,
    CONSTRAINT messages_content_check CHECK ((jsonb_typeof(content) = 'array'::text)),
    CONSTRAINT messages_role_check CHECK ((role = ANY (ARRAY['user'::text, 'assistant'::text, 'system'::text, 'tool'::text, 'agent'::text, 'observer'::text]))),
    CONSTRAINT messages_token_count_check CHECK ((token_count >= 0))
);
ALTER TABLE ONLY memctx.messages ALTER COLUMN embedding SET STORAGE PLAIN;


--
-- Name: summaries; Type: TABLE; Schema: memctx; Owner: -
--

CREATE TABLE memctx.summaries (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    conversation_id uuid NOT NULL,
    user_id uuid NOT NULL,
    level smallint NOT NULL,
    is_master boolean DEFAULT false NOT NULL,
    content text NOT NULL,
    source_kind text NOT NULL,
    source_ids uuid[] NOT NULL,
    first_seq bigint NOT NULL,
    last_seq bigint NOT NULL,
    token_count integer,
    embedding public.vector(384),
    tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, content)) STORED,
    summarizer text DEFAULT 'extractive'::text NOT NULL,
    edited boolean DEFAULT false NOT NULL,
    superseded_by uuid,
    superseded_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    CONSTRAINT summaries_check CHECK ((first_seq <= last_seq)),
    CONSTRAINT summaries_level_check CHECK ((level >= 1)),
    CONSTRAINT summaries_source_ids_check CHECK ((cardinality(source_ids) >= 1)),
    CONSTRAINT summaries_source_kind_check CHECK ((source_kind = ANY (ARRAY['message'::text, 'summary'::text]))),
    CONSTRAINT summaries_token_count_check CHECK ((token_count >= 0))
);
ALTER TABLE ONLY memctx.summaries ALTER COLUMN embedding SET STORAGE PLAIN;


--
-- Name: summary_boards; Type: TABLE; Schema: memctx; Owner: -
--

CREATE TABLE memctx.summary_boards (
    conversation_id uuid NOT NULL,
    user_id uuid NOT NULL,
    current_summary text DEFAULT ''::text NOT NULL,
    context_notes text DEFAULT ''::text NOT NULL,
    message_count integer DEFAULT 0 NOT NULL,
    last_seq bigint DEFAULT 0 NOT NULL,
    update_frequency integer DEFAULT 5 NOT NULL,
    version integer DEFAULT 0 NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    counts jsonb DEFAULT '{}'::jsonb NOT NULL,
    items jsonb DEFAULT '{}'::jsonb NOT NULL,
    CONSTRAINT summary_boards_update_frequency_check CHECK ((update_frequency >= 1))
);


--
-- Name: conversation_overview; Type: VIEW; Schema: memctx; Owner: -
--

CREATE VIEW memctx.conversation_overview WITH (security_invoker='true') AS
 SELECT c.id AS conversation_id,
    c.user_id,
    c.external_id,
    c.title,
    c.created_at,
    c.last_message_at,
    c.closed_at,
    c.message_count,
    COALESCE(m.tokens, (0)::bigint) AS message_tokens,
    COALESCE(s.live, (0)::numeric) AS live_summaries,
    COALESCE(s.by_level, '{}'::jsonb) AS summaries_by_level,
    b.updated_at AS board_updated_at,
    (now() - b.updated_at) AS board_age,
    (c.last_seq - COALESCE(b.last_seq, (0)::bigint)) AS messages_since_board
   FROM (((memctx.conversations c
     LEFT JOIN LATERAL ( SELECT sum(x.token_count) AS tokens
           FROM memctx.messages x
          WHERE ((x.conversation_id = c.id) AND (x.user_id = c.user_id))) m ON (true))
     LEFT JOIN LATERAL ( SELECT sum(l.n) AS live,
            jsonb_object_agg(l.level, l.n) AS by_level
           FROM ( SELECT
                        CASE
                            WHEN y.is_master THEN 'master'::text
                            ELSE (y.level)::text
                        END AS level,
                    count(*) AS n
                   FROM memctx.summaries y
                  WHERE ((y.conversation_id = c.id) AND (y.user_id = c.user_id) AND (y.superseded_at IS NULL))
                  GROUP BY
                        CASE
                            WHEN y.is_master THEN 'master'::text
                            ELSE (y.level)::text
                        END) l) s ON (true))
     LEFT JOIN memctx.summary_boards b ON (((b.conversation_id = c.id) AND (b.user_id = c.user_id))));


--
-- Name: conversation_summaries; Type: TABLE; Schema: memctx; Owner: -
--

CREATE TABLE memctx.conversation_summaries (
    conversation_id uuid NOT NULL,
    user_id uuid NOT NULL,
    summary text NOT NULL,
    key_facts jsonb DEFAULT '[]'::jsonb NOT NULL,
    entities jsonb DEFAULT '{}'::jsonb NOT NULL,
    topics jsonb DEFAULT '[]'::jsonb NOT NULL,
    action_items jsonb DEFAULT '[]'::jsonb NOT NULL,
    pending_questions jsonb DEFAULT '[]'::jsonb NOT NULL,
    first_seq bigint DEFAULT 0 NOT NULL,
    last_seq bigint DEFAULT 0 NOT NULL,
    token_count integer,
    embedding public.vector(384),
    tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, summary)) STORED,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT conversation_summaries_token_count_check CHECK ((token_count >= 0))
);
ALTER TABLE ONLY memctx.conversation_summaries ALTER COLUMN embedding SET STORAGE PLAIN;


--
-- Name: embedding_space; Type: TABLE; Schema: memctx; Owner: -
--

CREATE TABLE memctx.embedding_space (
    singleton boolean DEFAULT true NOT NULL,
    model text NOT NULL,
    dim integer NOT NULL,
    configured_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT embedding_space_dim_check CHECK (((dim >= 1) AND (dim <= 16000))),
    CONSTRAINT embedding_space_singleton_check CHECK (singleton)
);


--
-- Name: feedback; Type: TABLE; Schema: memctx; Owner: -
--

CREATE TABLE memctx.feedback (
    id bigint NOT NULL,
    user_id uuid NOT NULL,
    target_kind text NOT NULL,
    target_id uuid NOT NULL,
    rating text NOT NULL,
    via text NOT NULL,
    rated_by text NOT NULL,
    conversation_id uuid,
    note text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT feedback_note_check CHECK ((length(note) <= 2000)),
    CONSTRAINT feedback_rated_by_check CHECK (((length(rated_by) >= 1) AND (length(rated_by) <= 200))),
    CONSTRAINT feedback_rating_check CHECK ((rating = ANY (ARRAY['useful'::text, 'wrong'::text, 'outdated'::text]))),
    CONSTRAINT feedback_target_kind_check CHECK ((target_kind = ANY (ARRAY['profile_item'::text, 'message'::text, 'summary'::text, 'procedure'::text]))),
    CONSTRAINT feedback_via_check CHECK ((via = ANY (ARRAY['api'::text, 'mcp'::text, 'page'::text, 'cli'::text, 'library'::text])))
);


--
-- Name: feedback_id_seq; Type: SEQUENCE; Schema: memctx; Owner: -
--

ALTER TABLE memctx.feedback ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME memctx.feedback_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: procedures; Type: TABLE; Schema: memctx; Owner: -
--

CREATE TABLE memctx.procedures (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    user_id uuid NOT NULL,
    tool text NOT NULL,
    error text NOT NULL,
    fix text NOT NULL,
    seen_count integer DEFAULT 1 NOT NULL,
    resolved integer DEFAULT 0 NOT NULL,
    useful integer DEFAULT 0 NOT NULL,
    first_seen timestamp with time zone NOT NULL,
    last_seen timestamp with time zone NOT NULL,
    tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, ((tool || ' '::text) || error))) STORED,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT procedures_error_check CHECK (((length(error) >= 1) AND (length(error) <= 500))),
    CONSTRAINT procedures_fix_check CHECK ((length(fix) <= 2000)),
    CONSTRAINT procedures_resolved_check CHECK ((resolved >= 0)),
    CONSTRAINT procedures_seen_count_check CHECK ((seen_count >= 0)),
    CONSTRAINT procedures_tool_check CHECK (((length(tool) >= 1) AND (length(tool) <= 200))),
    CONSTRAINT procedures_useful_check CHECK ((useful >= 0))
);


--
-- Name: profile_items; Type: TABLE; Schema: memctx; Owner: -
--

CREATE TABLE memctx.profile_items (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    user_id uuid NOT NULL,
    person text NOT NULL,
    kind text NOT NULL,
    subject text NOT NULL,
    topic text NOT NULL,
    key text NOT NULL,
    value text NOT NULL,
    explicit boolean DEFAULT true NOT NULL,
    status text DEFAULT 'active'::text NOT NULL,
    origin text DEFAULT 'learned'::text NOT NULL,
    confidence real NOT NULL,
    seen_count integer DEFAULT 1 NOT NULL,
    overrides integer DEFAULT 0 NOT NULL,
    challenger jsonb,
    useful integer DEFAULT 0 NOT NULL,
    first_seen timestamp with time zone NOT NULL,
    last_seen timestamp with time zone NOT NULL,
    replaced_by uuid,
    replaced_at timestamp with time zone,
    edited_at timestamp with time zone,
    deleted_at timestamp with time zone,
    embedding public.vector,
    tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, ((topic || ' '::text) || value))) STORED,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT profile_items_confidence_check CHECK (((confidence >= (0)::double precision) AND (confidence <= (1)::double precision))),
    CONSTRAINT profile_items_key_check CHECK (((length(key) >= 1) AND (length(key) <= 600))),
    CONSTRAINT profile_items_kind_check CHECK ((kind = ANY (ARRAY['fact'::text, 'preference'::text, 'instruction'::text, 'plan'::text]))),
    CONSTRAINT profile_items_origin_check CHECK ((origin = ANY (ARRAY['learned'::text, 'user'::text]))),
    CONSTRAINT profile_items_overrides_check CHECK ((overrides >= 0)),
    CONSTRAINT profile_items_person_check CHECK (((length(person) >= 1) AND (length(person) <= 200))),
    CONSTRAINT profile_items_seen_count_check CHECK ((seen_count >= 0)),
    CONSTRAINT profile_items_status_check CHECK ((status = ANY (ARRAY['active'::text, 'replaced'::text, 'deleted'::text]))),
    CONSTRAINT profile_items_status_check2 CHECK (((status = 'replaced'::text) = (replaced_at IS NOT NULL))),
    CONSTRAINT profile_items_subject_check CHECK (((length(subject) >= 1) AND (length(subject) <= 200))),
    CONSTRAINT profile_items_topic_check CHECK (((length(topic) >= 1) AND (length(topic) <= 100))),
    CONSTRAINT profile_items_useful_check CHECK ((useful >= 0)),
    CONSTRAINT profile_items_value_check CHECK (((length(value) >= 1) AND (length(value) <= 2000)))
);


--
-- Name: feedback_log; Type: VIEW; Schema: memctx; Owner: -
--

CREATE VIEW memctx.feedback_log WITH (security_invoker='true') AS
 SELECT f.id,
    f.user_id,
    f.created_at,
    f.rating,
    f.target_kind,
    f.target_id,
    f.via,
    f.rated_by,
    f.conversation_id,
    f.note,
    COALESCE(p.value, "left"(m.text, 200), "left"(s.content, 200), ((r.tool || ': '::text) || r.error)) AS target_text
   FROM ((((memctx.feedback f
     LEFT JOIN memctx.profile_items p ON (((f.target_kind = 'profile_item'::text) AND (p.id = f.target_id) AND (p.user_id = f.user_id))))
     LEFT JOIN memctx.messages m ON (((f.target_kind = 'message'::text) AND (m.id = f.target_id) AND (m.user_id = f.user_id))))
     LEFT JOIN memctx.summaries s ON (((f.target_kind = 'summary'::text) AND (s.id = f.target_id) AND (s.user_id = f.user_id))))
     LEFT JOIN memctx.procedures r ON (((f.target_kind = 'procedure'::text) AND (r.id = f.target_id) AND (r.user_id = f.user_id))));


--
-- Name: idempotency_keys; Type: TABLE; Schema: memctx; Owner: -
--

CREATE TABLE memctx.idempotency_keys (
    user_id uuid NOT NULL,
    key text NOT NULL,
    conversation_id uuid NOT NULL,
    request_hash text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    completed_at timestamp with time zone,
    response jsonb,
    CONSTRAINT idempotency_keys_key_check CHECK (((length(key) >= 1) AND (length(key) <= 255)))
);


--
-- Name: live_summaries; Type: VIEW; Schema: memctx; Owner: -
--

CREATE VIEW memctx.live_summaries WITH (security_invoker='true') AS
 SELECT id,
    conversation_id,
    user_id,
    level,
    is_master,
    content,
    source_kind,
    source_ids,
    first_seq,
    last_seq,
    token_count,
    tsv,
    summarizer,
    edited,
    created_at,
    updated_at
   FROM memctx.summaries s
  WHERE (superseded_at IS NULL);


--
-- Name: message_codes; Type: TABLE; Schema: memctx; Owner: -
--

CREATE TABLE memctx.message_codes (
    message_id uuid NOT NULL,
    user_id uuid NOT NULL,
    conversation_id uuid NOT NULL,
    created_at timestamp with time zone NOT NULL,
    bits bit varying NOT NULL
);


--
-- Name: message_terms; Type: TABLE; Schema: memctx; Owner: -
--

CREATE TABLE memctx.message_terms (
    message_id uuid NOT NULL,
    user_id uuid NOT NULL,
    conversation_id uuid NOT NULL,
    seq bigint NOT NULL,
    created_at timestamp with time zone NOT NULL,
    lexemes integer NOT NULL,
    tsv tsvector NOT NULL
);


--
-- Name: outbox; Type: TABLE; Schema: memctx; Owner: -
--

CREATE TABLE memctx.outbox (
    id bigint NOT NULL,
    user_id uuid NOT NULL,
    conversation_id uuid NOT NULL,
    kind text DEFAULT 'message'::text NOT NULL,
    message_id uuid,
    seq bigint,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    claimed_at timestamp with time zone,
    claimed_by text,
    processed_at timestamp with time zone,
    attempts integer DEFAULT 0 NOT NULL,
    last_error text,
    CONSTRAINT outbox_kind_check CHECK ((kind = ANY (ARRAY['message'::text, 'summarize'::text, 'close'::text])))
);


--
-- Name: outbox_id_seq; Type: SEQUENCE; Schema: memctx; Owner: -
--

ALTER TABLE memctx.outbox ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME memctx.outbox_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: procedure_sources; Type: TABLE; Schema: memctx; Owner: -
--

CREATE TABLE memctx.procedure_sources (
    procedure_id uuid NOT NULL,
    user_id uuid NOT NULL,
    message_id uuid NOT NULL,
    conversation_id uuid NOT NULL,
    step text NOT NULL,
    said_at timestamp with time zone NOT NULL,
    CONSTRAINT procedure_sources_step_check CHECK ((step = ANY (ARRAY['error'::text, 'fix'::text])))
);


--
-- Name: profile_progress; Type: TABLE; Schema: memctx; Owner: -
--

CREATE TABLE memctx.profile_progress (
    conversation_id uuid NOT NULL,
    user_id uuid NOT NULL,
    learned_seq bigint DEFAULT 0 NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: profile_sources; Type: TABLE; Schema: memctx; Owner: -
--

CREATE TABLE memctx.profile_sources (
    item_id uuid NOT NULL,
    user_id uuid NOT NULL,
    message_id uuid NOT NULL,
    conversation_id uuid NOT NULL,
    said_at timestamp with time zone NOT NULL
);


--
-- Name: profile_storage; Type: VIEW; Schema: memctx; Owner: -
--

CREATE VIEW memctx.profile_storage WITH (security_invoker='true') AS
 SELECT u.user_id,
    COALESCE(i.active, (0)::bigint) AS active_items,
    COALESCE(i.replaced, (0)::bigint) AS replaced_items,
    COALESCE(i.deleted, (0)::bigint) AS deleted_items,
    COALESCE(s.sources, (0)::bigint) AS sources,
    COALESCE(r.procedures, (0)::bigint) AS procedures,
    ((COALESCE(i.bytes, (0)::bigint) + COALESCE(s.bytes, (0)::bigint)) + COALESCE(r.bytes, (0)::bigint)) AS bytes
   FROM (((( SELECT profile_items.user_id
           FROM memctx.profile_items
        UNION
         SELECT procedures.user_id
           FROM memctx.procedures) u
     LEFT JOIN ( SELECT x.user_id,
            count(*) FILTER (WHERE (x.status = 'active'::text)) AS active,
            count(*) FILTER (WHERE (x.status = 'replaced'::text)) AS replaced,
            count(*) FILTER (WHERE (x.status = 'deleted'::text)) AS deleted,
            sum(pg_column_size(x.*)) AS bytes
           FROM memctx.profile_items x
          GROUP BY x.user_id) i ON ((i.user_id = u.user_id)))
     LEFT JOIN ( SELECT y.user_id,
            count(*) AS sources,
            sum(pg_column_size(y.*)) AS bytes
           FROM memctx.profile_sources y
          GROUP BY y.user_id) s ON ((s.user_id = u.user_id)))
     LEFT JOIN ( SELECT z.user_id,
            count(*) AS procedures,
            sum(pg_column_size(z.*)) AS bytes
           FROM memctx.procedures z
          GROUP BY z.user_id) r ON ((r.user_id = u.user_id)));


--
-- Name: schema_migrations; Type: TABLE; Schema: memctx; Owner: -
--

CREATE TABLE memctx.schema_migrations (
    version integer NOT NULL,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: search_cache; Type: TABLE; Schema: memctx; Owner: -
--

CREATE TABLE memctx.search_cache (
    user_id uuid NOT NULL,
    fingerprint text NOT NULL,
    query text NOT NULL,
    engine text NOT NULL,
    results jsonb NOT NULL,
    cleaned jsonb NOT NULL,
    fetched_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT search_cache_cleaned_check CHECK ((jsonb_typeof(cleaned) = 'array'::text)),
    CONSTRAINT search_cache_fingerprint_check CHECK ((fingerprint ~ '^[0-9a-f]{64}$'::text)),
    CONSTRAINT search_cache_results_check CHECK ((jsonb_typeof(results) = 'array'::text))
);


--
-- Name: shadow_requests; Type: TABLE; Schema: memctx; Owner: -
--

CREATE TABLE memctx.shadow_requests (
    request_id bigint NOT NULL,
    user_id uuid NOT NULL,
    conversation_id uuid NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    client_tokens integer NOT NULL,
    context_tokens integer NOT NULL,
    history_messages integer NOT NULL,
    history_kept integer NOT NULL,
    context jsonb NOT NULL,
    context_sha256 text NOT NULL,
    CONSTRAINT shadow_requests_check CHECK (((history_kept >= 0) AND (history_kept <= history_messages))),
    CONSTRAINT shadow_requests_client_tokens_check CHECK ((client_tokens >= 0)),
    CONSTRAINT shadow_requests_context_check CHECK ((jsonb_typeof(context) = 'array'::text)),
    CONSTRAINT shadow_requests_context_sha256_check CHECK ((context_sha256 ~ '^[0-9a-f]{64}$'::text)),
    CONSTRAINT shadow_requests_context_tokens_check CHECK ((context_tokens >= 0)),
    CONSTRAINT shadow_requests_history_messages_check CHECK ((history_messages >= 0))
);


--
-- Name: shadow_comparison; Type: VIEW; Schema: memctx; Owner: -
--

CREATE VIEW memctx.shadow_comparison WITH (security_invoker='true') AS
 SELECT user_id,
    conversation_id,
    date_trunc('day'::text, created_at) AS day,
    count(*) AS requests,
    sum(client_tokens) AS client_tokens,
    sum(context_tokens) AS context_tokens,
    sum((client_tokens - context_tokens)) AS tokens_saved,
    round(((sum(context_tokens))::numeric / (NULLIF(sum(client_tokens), 0))::numeric), 4) AS context_share,
    sum(history_messages) AS history_messages,
    sum(history_kept) AS history_kept,
    round(((sum(history_kept))::numeric / (NULLIF(sum(history_messages), 0))::numeric), 4) AS history_kept_share
   FROM memctx.shadow_requests s
  GROUP BY user_id, conversation_id, (date_trunc('day'::text, created_at));


--
-- Name: token_savings; Type: VIEW; Schema: memctx; Owner: -
--

CREATE VIEW memctx.token_savings WITH (security_invoker='true') AS
 SELECT user_id,
    conversation_id,
    kind,
    date_trunc('day'::text, created_at) AS day,
    count(*) AS requests,
    sum(tokens_used) AS tokens_used,
    sum(full_history_tokens) AS full_history_tokens,
    sum((full_history_tokens - tokens_used)) AS tokens_saved,
    round(((1)::numeric - ((sum(tokens_used))::numeric / NULLIF(sum(full_history_tokens), (0)::numeric))), 4) AS saved_share,
    percentile_cont((0.5)::double precision) WITHIN GROUP (ORDER BY ((timings_ms ->> 'total'::text))::double precision) AS context_ms_p50,
    percentile_cont((0.95)::double precision) WITHIN GROUP (ORDER BY ((timings_ms ->> 'total'::text))::double precision) AS context_ms_p95
   FROM memctx.context_requests r
  GROUP BY user_id, conversation_id, kind, (date_trunc('day'::text, created_at));


--
-- Name: worker_backlog; Type: VIEW; Schema: memctx; Owner: -
--

CREATE VIEW memctx.worker_backlog WITH (security_invoker='true') AS
 SELECT user_id,
    conversation_id,
    count(*) FILTER (WHERE (processed_at IS NULL)) AS pending,
    count(*) FILTER (WHERE ((processed_at IS NULL) AND (claimed_at IS NOT NULL))) AS claimed,
    count(*) FILTER (WHERE ((processed_at IS NULL) AND (last_error IS NOT NULL))) AS failing,
    max(attempts) FILTER (WHERE (processed_at IS NULL)) AS max_attempts,
    min(created_at) FILTER (WHERE (processed_at IS NULL)) AS oldest_pending_at,
    (now() - min(created_at) FILTER (WHERE (processed_at IS NULL))) AS lag,
    max(processed_at) AS last_processed_at,
    percentile_cont((0.5)::double precision) WITHIN GROUP (ORDER BY ((EXTRACT(epoch FROM (processed_at - created_at)))::double precision)) FILTER (WHERE (processed_at > (now() - '01:00:00'::interval))) AS recent_lag_p50_s,
    percentile_cont((0.95)::double precision) WITHIN GROUP (ORDER BY ((EXTRACT(epoch FROM (processed_at - created_at)))::double precision)) FILTER (WHERE (processed_at > (now() - '01:00:00'::interval))) AS recent_lag_p95_s
   FROM memctx.outbox o
  GROUP BY user_id, conversation_id
 HAVING (count(*) FILTER (WHERE (processed_at IS NULL)) > 0);


--
-- Name: working_memory_chunks; Type: TABLE; Schema: memctx; Owner: -
--

CREATE TABLE memctx.working_memory_chunks (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    conversation_id uuid NOT NULL,
    user_id uuid NOT NULL,
    chunk_text text NOT NULL,
    message_ids uuid[] DEFAULT '{}'::uuid[] NOT NULL,
    importance real DEFAULT 0.5 NOT NULL,
    chunk_type text DEFAULT 'context'::text NOT NULL,
    token_count integer,
    embedding public.vector(384),
    expires_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    message_id uuid,
    part smallint,
    CONSTRAINT working_memory_chunks_importance_check CHECK (((importance >= (0)::double precision) AND (importance <= (1)::double precision))),
    CONSTRAINT working_memory_chunks_part_check CHECK ((part >= 0)),
    CONSTRAINT working_memory_chunks_passage_check CHECK ((((message_id IS NULL) = (part IS NULL)) AND ((message_id IS NULL) OR (chunk_type = 'passage'::text)))),
    CONSTRAINT working_memory_chunks_token_count_check CHECK ((token_count >= 0))
);
ALTER TABLE ONLY memctx.working_memory_chunks ALTER COLUMN embedding SET STORAGE PLAIN;


--
-- Name: queue; Type: TABLE; Schema: memctx_queue; Owner: -
--

CREATE TABLE memctx_queue.queue (
    message_id uuid NOT NULL,
    queue_name text DEFAULT 'default'::text NOT NULL,
    state memctx_queue.state,
    mtime timestamp with time zone DEFAULT now(),
    message jsonb,
    "position" bigint NOT NULL,
    available_at timestamp with time zone DEFAULT now() NOT NULL,
    worker_id uuid,
    consumed_at timestamp with time zone
);


--
-- Name: queue_position_seq; Type: SEQUENCE; Schema: memctx_queue; Owner: -
--

ALTER TABLE memctx_queue.queue ALTER COLUMN "position" ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME memctx_queue.queue_position_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: result; Type: TABLE; Schema: memctx_queue; Owner: -
--

CREATE TABLE memctx_queue.result (
    message_id uuid NOT NULL,
    result jsonb,
    expires_at timestamp with time zone
);


--
-- Name: worker; Type: TABLE; Schema: memctx_queue; Owner: -
--

CREATE TABLE memctx_queue.worker (
    worker_id uuid NOT NULL,
    heartbeat_at timestamp with time zone NOT NULL
);


--
-- Name: api_keys api_keys_key_hash_key; Type: CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.api_keys
    ADD CONSTRAINT api_keys_key_hash_key UNIQUE (key_hash);


--
-- Name: api_keys api_keys_pkey; Type: CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.api_keys
    ADD CONSTRAINT api_keys_pkey PRIMARY KEY (id);


--
-- Name: context_requests context_requests_pkey; Type: CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.context_requests
    ADD CONSTRAINT context_requests_pkey PRIMARY KEY (id, user_id);


--
-- Name: conversation_summaries conversation_summaries_pkey; Type: CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.conversation_summaries
    ADD CONSTRAINT conversation_summaries_pkey PRIMARY KEY (conversation_id, user_id);


--
-- Name: conversations conversations_external_id_key; Type: CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.conversations
    ADD CONSTRAINT conversations_external_id_key UNIQUE (user_id, external_id);


--
-- Name: conversations conversations_pkey; Type: CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.conversations
    ADD CONSTRAINT conversations_pkey PRIMARY KEY (id, user_id);


--
-- Name: embedding_space embedding_space_pkey; Type: CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.embedding_space
    ADD CONSTRAINT embedding_space_pkey PRIMARY KEY (singleton);


--
-- Name: feedback feedback_pkey; Type: CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.feedback
    ADD CONSTRAINT feedback_pkey PRIMARY KEY (id, user_id);


--
-- Name: idempotency_keys idempotency_keys_pkey; Type: CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.idempotency_keys
    ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (user_id, key);


--
-- Name: message_codes message_codes_pkey; Type: CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.message_codes
    ADD CONSTRAINT message_codes_pkey PRIMARY KEY (message_id, user_id);


--
-- Name: message_terms message_terms_pkey; Type: CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.message_terms
    ADD CONSTRAINT message_terms_pkey PRIMARY KEY (message_id, user_id);


--
-- Name: messages messages_created_at_range; Type: CHECK CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE memctx.messages
    ADD CONSTRAINT messages_created_at_range CHECK (((created_at >= '1000-01-01 00:00:00+00'::timestamp with time zone) AND (created_at < '9000-01-01 00:00:00+00'::timestamp with time zone))) NOT VALID;


--
-- Name: messages messages_external_id_key; Type: CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.messages
    ADD CONSTRAINT messages_external_id_key UNIQUE (conversation_id, external_id, user_id);


--
-- Name: messages messages_pkey; Type: CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.messages
    ADD CONSTRAINT messages_pkey PRIMARY KEY (id, user_id);


--
-- Name: messages messages_seq_key; Type: CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.messages
    ADD CONSTRAINT messages_seq_key UNIQUE (conversation_id, seq, user_id);


--
-- Name: outbox outbox_pkey; Type: CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.outbox
    ADD CONSTRAINT outbox_pkey PRIMARY KEY (id, user_id);


--
-- Name: procedure_sources procedure_sources_pkey; Type: CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.procedure_sources
    ADD CONSTRAINT procedure_sources_pkey PRIMARY KEY (procedure_id, message_id, user_id);


--
-- Name: procedures procedures_error_key; Type: CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.procedures
    ADD CONSTRAINT procedures_error_key UNIQUE (user_id, tool, error);


--
-- Name: procedures procedures_pkey; Type: CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.procedures
    ADD CONSTRAINT procedures_pkey PRIMARY KEY (id, user_id);


--
-- Name: profile_items profile_items_pkey; Type: CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.profile_items
    ADD CONSTRAINT profile_items_pkey PRIMARY KEY (id, user_id);


--
-- Name: profile_progress profile_progress_pkey; Type: CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.profile_progress
    ADD CONSTRAINT profile_progress_pkey PRIMARY KEY (conversation_id, user_id);


--
-- Name: profile_sources profile_sources_pkey; Type: CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.profile_sources
    ADD CONSTRAINT profile_sources_pkey PRIMARY KEY (item_id, message_id, user_id);


--
-- Name: schema_migrations schema_migrations_pkey; Type: CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.schema_migrations
    ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (version);


--
-- Name: search_cache search_cache_pkey; Type: CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.search_cache
    ADD CONSTRAINT search_cache_pkey PRIMARY KEY (user_id, fingerprint);


--
-- Name: shadow_requests shadow_requests_pkey; Type: CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.shadow_requests
    ADD CONSTRAINT shadow_requests_pkey PRIMARY KEY (request_id, user_id);


--
-- Name: summaries summaries_id_conversation_key; Type: CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.summaries
    ADD CONSTRAINT summaries_id_conversation_key UNIQUE (id, conversation_id, user_id);


--
-- Name: summaries summaries_pkey; Type: CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.summaries
    ADD CONSTRAINT summaries_pkey PRIMARY KEY (id, user_id);


--
-- Name: summary_boards summary_boards_pkey; Type: CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.summary_boards
    ADD CONSTRAINT summary_boards_pkey PRIMARY KEY (conversation_id, user_id);


--
-- Name: working_memory_chunks working_memory_chunks_pkey; Type: CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.working_memory_chunks
    ADD CONSTRAINT working_memory_chunks_pkey PRIMARY KEY (id, user_id);


--
-- Name: queue queue_pkey; Type: CONSTRAINT; Schema: memctx_queue; Owner: -
--

ALTER TABLE ONLY memctx_queue.queue
    ADD CONSTRAINT queue_pkey PRIMARY KEY (message_id);


--
-- Name: result result_pkey; Type: CONSTRAINT; Schema: memctx_queue; Owner: -
--

ALTER TABLE ONLY memctx_queue.result
    ADD CONSTRAINT result_pkey PRIMARY KEY (message_id);


--
-- Name: worker worker_pkey; Type: CONSTRAINT; Schema: memctx_queue; Owner: -
--

ALTER TABLE ONLY memctx_queue.worker
    ADD CONSTRAINT worker_pkey PRIMARY KEY (worker_id);


--
-- Name: api_keys_user_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX api_keys_user_idx ON memctx.api_keys USING btree (user_id);


--
-- Name: context_requests_conversation_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX context_requests_conversation_idx ON memctx.context_requests USING btree (conversation_id, created_at);


--
-- Name: context_requests_user_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX context_requests_user_idx ON memctx.context_requests USING btree (user_id, created_at);


--
-- Name: conversation_summaries_embedding_hnsw; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX conversation_summaries_embedding_hnsw ON memctx.conversation_summaries USING hnsw (embedding public.vector_cosine_ops) WITH (m='16', ef_construction='64');


--
-- Name: conversation_summaries_tsv_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX conversation_summaries_tsv_idx ON memctx.conversation_summaries USING gin (tsv);


--
-- Name: conversation_summaries_user_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX conversation_summaries_user_idx ON memctx.conversation_summaries USING btree (user_id, updated_at DESC);


--
-- Name: conversations_user_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX conversations_user_idx ON memctx.conversations USING btree (user_id, last_message_at DESC);


--
-- Name: feedback_created_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX feedback_created_idx ON memctx.feedback USING btree (user_id, created_at);


--
-- Name: feedback_target_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX feedback_target_idx ON memctx.feedback USING btree (user_id, target_kind, target_id);


--
-- Name: idempotency_keys_created_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX idempotency_keys_created_idx ON memctx.idempotency_keys USING btree (user_id, created_at);


--
-- Name: message_codes_user_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX message_codes_user_idx ON memctx.message_codes USING btree (user_id, conversation_id) INCLUDE (message_id, created_at, bits);


--
-- Name: messages_embedding_hnsw; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX messages_embedding_hnsw ON memctx.messages USING hnsw (embedding public.vector_cosine_ops) WITH (m='16', ef_construction='64');


--
-- Name: messages_lexemes_missing_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX messages_lexemes_missing_idx ON memctx.messages USING btree (user_id, conversation_id) WHERE (lexemes IS NULL);


--
-- Name: messages_unembedded_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX messages_unembedded_idx ON memctx.messages USING btree (conversation_id, seq) WHERE (embedding IS NULL);


--
-- Name: messages_user_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX messages_user_idx ON memctx.messages USING btree (user_id, conversation_id, seq);


--
-- Name: messages_user_recent_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX messages_user_recent_idx ON memctx.messages USING btree (user_id, created_at DESC, seq DESC);


--
-- Name: outbox_claimable_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX outbox_claimable_idx ON memctx.outbox USING btree (id) WHERE (processed_at IS NULL);


--
-- Name: outbox_pending_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX outbox_pending_idx ON memctx.outbox USING btree (conversation_id, id) WHERE (processed_at IS NULL);


--
-- Name: outbox_user_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX outbox_user_idx ON memctx.outbox USING btree (user_id);


--
-- Name: outbox_user_pending_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX outbox_user_pending_idx ON memctx.outbox USING btree (user_id, id) WHERE (processed_at IS NULL);


--
-- Name: procedure_sources_message_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX procedure_sources_message_idx ON memctx.procedure_sources USING btree (message_id, user_id);


--
-- Name: profile_items_replaced_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX profile_items_replaced_idx ON memctx.profile_items USING btree (replaced_by, user_id) WHERE (replaced_by IS NOT NULL);


--
-- Name: profile_items_user_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX profile_items_user_idx ON memctx.profile_items USING btree (user_id, status, person);


--
-- Name: profile_sources_message_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX profile_sources_message_idx ON memctx.profile_sources USING btree (message_id, user_id);


--
-- Name: search_cache_fetched_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX search_cache_fetched_idx ON memctx.search_cache USING btree (user_id, fetched_at);


--
-- Name: shadow_requests_conversation_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX shadow_requests_conversation_idx ON memctx.shadow_requests USING btree (conversation_id, created_at);


--
-- Name: summaries_embedding_hnsw; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX summaries_embedding_hnsw ON memctx.summaries USING hnsw (embedding public.vector_cosine_ops) WITH (m='16', ef_construction='64');


--
-- Name: summaries_live_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX summaries_live_idx ON memctx.summaries USING btree (conversation_id, level, first_seq) WHERE (superseded_at IS NULL);


--
-- Name: summaries_one_live_master_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE UNIQUE INDEX summaries_one_live_master_idx ON memctx.summaries USING btree (conversation_id, user_id) WHERE (is_master AND (superseded_at IS NULL));


--
-- Name: summaries_tsv_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX summaries_tsv_idx ON memctx.summaries USING gin (tsv);


--
-- Name: summaries_unembedded_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX summaries_unembedded_idx ON memctx.summaries USING btree (created_at, id) WHERE (embedding IS NULL);


--
-- Name: summaries_user_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX summaries_user_idx ON memctx.summaries USING btree (user_id, conversation_id);


--
-- Name: summary_boards_user_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX summary_boards_user_idx ON memctx.summary_boards USING btree (user_id);


--
-- Name: working_memory_chunks_conv_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX working_memory_chunks_conv_idx ON memctx.working_memory_chunks USING btree (conversation_id, created_at);


--
-- Name: working_memory_chunks_embedding_hnsw; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX working_memory_chunks_embedding_hnsw ON memctx.working_memory_chunks USING hnsw (embedding public.vector_cosine_ops) WITH (m='16', ef_construction='64');


--
-- Name: working_memory_chunks_passage_key; Type: INDEX; Schema: memctx; Owner: -
--

CREATE UNIQUE INDEX working_memory_chunks_passage_key ON memctx.working_memory_chunks USING btree (message_id, part, user_id) WHERE (message_id IS NOT NULL);


--
-- Name: working_memory_chunks_scope_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX working_memory_chunks_scope_idx ON memctx.working_memory_chunks USING btree (user_id, conversation_id) WHERE (message_id IS NOT NULL);


--
-- Name: working_memory_chunks_user_idx; Type: INDEX; Schema: memctx; Owner: -
--

CREATE INDEX working_memory_chunks_user_idx ON memctx.working_memory_chunks USING btree (user_id);


--
-- Name: queue_queue_name_available_at_position_idx; Type: INDEX; Schema: memctx_queue; Owner: -
--

CREATE INDEX queue_queue_name_available_at_position_idx ON memctx_queue.queue USING btree (queue_name, available_at, "position") WHERE (state = 'queued'::memctx_queue.state);


--
-- Name: queue_state_mtime_idx; Type: INDEX; Schema: memctx_queue; Owner: -
--

CREATE INDEX queue_state_mtime_idx ON memctx_queue.queue USING btree (state, mtime);


--
-- Name: messages messages_assign_seq; Type: TRIGGER; Schema: memctx; Owner: -
--

CREATE TRIGGER messages_assign_seq BEFORE INSERT ON memctx.messages FOR EACH ROW EXECUTE FUNCTION memctx.messages_assign_seq();


--
-- Name: messages messages_check_block_fields; Type: TRIGGER; Schema: memctx; Owner: -
--

CREATE TRIGGER messages_check_block_fields BEFORE INSERT OR UPDATE OF content ON memctx.messages FOR EACH ROW EXECUTE FUNCTION memctx.messages_check_block_fields();


--
-- Name: messages messages_codes_insert; Type: TRIGGER; Schema: memctx; Owner: -
--

CREATE TRIGGER messages_codes_insert AFTER INSERT ON memctx.messages REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION memctx.message_codes_write();


--
-- Name: messages messages_codes_update; Type: TRIGGER; Schema: memctx; Owner: -
--

CREATE TRIGGER messages_codes_update AFTER UPDATE ON memctx.messages REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION memctx.message_codes_write();


--
-- Name: messages messages_count; Type: TRIGGER; Schema: memctx; Owner: -
--

CREATE TRIGGER messages_count AFTER INSERT ON memctx.messages REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION memctx.messages_count();


--
-- Name: messages messages_derive_text; Type: TRIGGER; Schema: memctx; Owner: -
--

CREATE TRIGGER messages_derive_text BEFORE INSERT OR UPDATE OF content, text ON memctx.messages FOR EACH ROW EXECUTE FUNCTION memctx.messages_derive_text();


--
-- Name: messages messages_drop_passages; Type: TRIGGER; Schema: memctx; Owner: -
--

CREATE TRIGGER messages_drop_passages AFTER UPDATE OF text ON memctx.messages FOR EACH ROW WHEN ((old.text IS DISTINCT FROM new.text)) EXECUTE FUNCTION memctx.messages_drop_passages();


--
-- Name: messages messages_enqueue; Type: TRIGGER; Schema: memctx; Owner: -
--

CREATE TRIGGER messages_enqueue AFTER INSERT ON memctx.messages REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION memctx.messages_enqueue();


--
-- Name: messages messages_lexemes; Type: TRIGGER; Schema: memctx; Owner: -
--

CREATE TRIGGER messages_lexemes BEFORE INSERT OR UPDATE ON memctx.messages FOR EACH ROW EXECUTE FUNCTION memctx.messages_lexemes();

ALTER TABLE memctx.messages ENABLE ALWAYS TRIGGER messages_lexemes;


--
-- Name: messages messages_terms_insert; Type: TRIGGER; Schema: memctx; Owner: -
--

CREATE TRIGGER messages_terms_insert AFTER INSERT ON memctx.messages REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION memctx.message_terms_insert();


--
-- Name: messages messages_terms_update; Type: TRIGGER; Schema: memctx; Owner: -
--

CREATE TRIGGER messages_terms_update AFTER UPDATE OF content, text, created_at, conversation_id, seq ON memctx.messages FOR EACH ROW EXECUTE FUNCTION memctx.message_terms_update();


--
-- Name: procedure_sources procedure_sources_gone; Type: TRIGGER; Schema: memctx; Owner: -
--

CREATE TRIGGER procedure_sources_gone AFTER DELETE ON memctx.procedure_sources FOR EACH ROW EXECUTE FUNCTION memctx.procedure_sources_gone();


--
-- Name: profile_items profile_item_gone; Type: TRIGGER; Schema: memctx; Owner: -
--

CREATE TRIGGER profile_item_gone AFTER DELETE ON memctx.profile_items FOR EACH ROW EXECUTE FUNCTION memctx.profile_item_gone();


--
-- Name: profile_sources profile_sources_gone; Type: TRIGGER; Schema: memctx; Owner: -
--

CREATE TRIGGER profile_sources_gone AFTER DELETE ON memctx.profile_sources FOR EACH ROW EXECUTE FUNCTION memctx.profile_sources_gone();


--
-- Name: context_requests context_requests_conversation_fkey; Type: FK CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.context_requests
    ADD CONSTRAINT context_requests_conversation_fkey FOREIGN KEY (conversation_id, user_id) REFERENCES memctx.conversations(id, user_id) ON UPDATE CASCADE ON DELETE CASCADE;


--
-- Name: conversation_summaries conversation_summaries_conversation_fkey; Type: FK CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.conversation_summaries
    ADD CONSTRAINT conversation_summaries_conversation_fkey FOREIGN KEY (conversation_id, user_id) REFERENCES memctx.conversations(id, user_id) ON UPDATE CASCADE ON DELETE CASCADE;


--
-- Name: feedback feedback_conversation_fkey; Type: FK CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.feedback
    ADD CONSTRAINT feedback_conversation_fkey FOREIGN KEY (conversation_id, user_id) REFERENCES memctx.conversations(id, user_id) ON UPDATE CASCADE ON DELETE CASCADE;


--
-- Name: idempotency_keys idempotency_keys_conversation_fkey; Type: FK CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.idempotency_keys
    ADD CONSTRAINT idempotency_keys_conversation_fkey FOREIGN KEY (conversation_id, user_id) REFERENCES memctx.conversations(id, user_id) ON UPDATE CASCADE ON DELETE CASCADE;


--
-- Name: message_codes message_codes_message_fkey; Type: FK CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.message_codes
    ADD CONSTRAINT message_codes_message_fkey FOREIGN KEY (message_id, user_id) REFERENCES memctx.messages(id, user_id) ON DELETE CASCADE;


--
-- Name: message_terms message_terms_message_fkey; Type: FK CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.message_terms
    ADD CONSTRAINT message_terms_message_fkey FOREIGN KEY (message_id, user_id) REFERENCES memctx.messages(id, user_id) ON DELETE CASCADE;


--
-- Name: messages messages_conversation_fkey; Type: FK CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.messages
    ADD CONSTRAINT messages_conversation_fkey FOREIGN KEY (conversation_id, user_id) REFERENCES memctx.conversations(id, user_id) ON UPDATE CASCADE ON DELETE CASCADE;


--
-- Name: outbox outbox_conversation_fkey; Type: FK CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.outbox
    ADD CONSTRAINT outbox_conversation_fkey FOREIGN KEY (conversation_id, user_id) REFERENCES memctx.conversations(id, user_id) ON UPDATE CASCADE ON DELETE CASCADE;


--
-- Name: procedure_sources procedure_sources_message_fkey; Type: FK CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.procedure_sources
    ADD CONSTRAINT procedure_sources_message_fkey FOREIGN KEY (message_id, user_id) REFERENCES memctx.messages(id, user_id) ON DELETE CASCADE;


--
-- Name: procedure_sources procedure_sources_procedure_fkey; Type: FK CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.procedure_sources
    ADD CONSTRAINT procedure_sources_procedure_fkey FOREIGN KEY (procedure_id, user_id) REFERENCES memctx.procedures(id, user_id) ON DELETE CASCADE;


--
-- Name: profile_progress profile_progress_conversation_fkey; Type: FK CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.profile_progress
    ADD CONSTRAINT profile_progress_conversation_fkey FOREIGN KEY (conversation_id, user_id) REFERENCES memctx.conversations(id, user_id) ON UPDATE CASCADE ON DELETE CASCADE;


--
-- Name: profile_sources profile_sources_item_fkey; Type: FK CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.profile_sources
    ADD CONSTRAINT profile_sources_item_fkey FOREIGN KEY (item_id, user_id) REFERENCES memctx.profile_items(id, user_id) ON DELETE CASCADE;


--
-- Name: profile_sources profile_sources_message_fkey; Type: FK CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.profile_sources
    ADD CONSTRAINT profile_sources_message_fkey FOREIGN KEY (message_id, user_id) REFERENCES memctx.messages(id, user_id) ON DELETE CASCADE;


--
-- Name: shadow_requests shadow_requests_conversation_fkey; Type: FK CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.shadow_requests
    ADD CONSTRAINT shadow_requests_conversation_fkey FOREIGN KEY (conversation_id, user_id) REFERENCES memctx.conversations(id, user_id) ON UPDATE CASCADE ON DELETE CASCADE;


--
-- Name: shadow_requests shadow_requests_request_fkey; Type: FK CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.shadow_requests
    ADD CONSTRAINT shadow_requests_request_fkey FOREIGN KEY (request_id, user_id) REFERENCES memctx.context_requests(id, user_id) ON DELETE CASCADE;


--
-- Name: summaries summaries_conversation_fkey; Type: FK CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.summaries
    ADD CONSTRAINT summaries_conversation_fkey FOREIGN KEY (conversation_id, user_id) REFERENCES memctx.conversations(id, user_id) ON UPDATE CASCADE ON DELETE CASCADE;


--
-- Name: summaries summaries_superseded_by_fkey; Type: FK CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.summaries
    ADD CONSTRAINT summaries_superseded_by_fkey FOREIGN KEY (superseded_by, conversation_id, user_id) REFERENCES memctx.summaries(id, conversation_id, user_id) ON DELETE SET NULL (superseded_by);


--
-- Name: summary_boards summary_boards_conversation_fkey; Type: FK CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.summary_boards
    ADD CONSTRAINT summary_boards_conversation_fkey FOREIGN KEY (conversation_id, user_id) REFERENCES memctx.conversations(id, user_id) ON UPDATE CASCADE ON DELETE CASCADE;


--
-- Name: working_memory_chunks working_memory_chunks_conversation_fkey; Type: FK CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.working_memory_chunks
    ADD CONSTRAINT working_memory_chunks_conversation_fkey FOREIGN KEY (conversation_id, user_id) REFERENCES memctx.conversations(id, user_id) ON UPDATE CASCADE ON DELETE CASCADE;


--
-- Name: working_memory_chunks working_memory_chunks_message_fkey; Type: FK CONSTRAINT; Schema: memctx; Owner: -
--

ALTER TABLE ONLY memctx.working_memory_chunks
    ADD CONSTRAINT working_memory_chunks_message_fkey FOREIGN KEY (message_id, user_id) REFERENCES memctx.messages(id, user_id) ON DELETE CASCADE;


--
-- Name: api_keys; Type: ROW SECURITY; Schema: memctx; Owner: -
--

ALTER TABLE memctx.api_keys ENABLE ROW LEVEL SECURITY;

--
-- Name: api_keys api_keys_owner; Type: POLICY; Schema: memctx; Owner: -
--

CREATE POLICY api_keys_owner ON memctx.api_keys TO authenticated USING ((user_id = ( SELECT auth.uid() AS uid)));


--
-- Name: context_requests; Type: ROW SECURITY; Schema: memctx; Owner: -
--

ALTER TABLE memctx.context_requests ENABLE ROW LEVEL SECURITY;

--
-- Name: context_requests context_requests_owner; Type: POLICY; Schema: memctx; Owner: -
--

CREATE POLICY context_requests_owner ON memctx.context_requests TO authenticated USING ((user_id = ( SELECT auth.uid() AS uid))) WITH CHECK (((user_id = ( SELECT auth.uid() AS uid)) AND (EXISTS ( SELECT 1
   FROM memctx.conversations c
  WHERE ((c.id = context_requests.conversation_id) AND (c.user_id = ( SELECT auth.uid() AS uid)))))));


--
-- Name: conversation_summaries; Type: ROW SECURITY; Schema: memctx; Owner: -
--

ALTER TABLE memctx.conversation_summaries ENABLE ROW LEVEL SECURITY;

--
-- Name: conversation_summaries conversation_summaries_owner; Type: POLICY; Schema: memctx; Owner: -
--

CREATE POLICY conversation_summaries_owner ON memctx.conversation_summaries TO authenticated USING ((user_id = ( SELECT auth.uid() AS uid))) WITH CHECK (((user_id = ( SELECT auth.uid() AS uid)) AND (EXISTS ( SELECT 1
   FROM memctx.conversations c
  WHERE ((c.id = conversation_summaries.conversation_id) AND (c.user_id = ( SELECT auth.uid() AS uid)))))));


--
-- Name: conversations; Type: ROW SECURITY; Schema: memctx; Owner: -
--

ALTER TABLE memctx.conversations ENABLE ROW LEVEL SECURITY;

--
-- Name: conversations conversations_owner; Type: POLICY; Schema: memctx; Owner: -
--

CREATE POLICY conversations_owner ON memctx.conversations TO authenticated USING ((user_id = auth.uid())) WITH CHECK ((user_id = auth.uid()));


--
-- Name: embedding_space; Type: ROW SECURITY; Schema: memctx; Owner: -
--

ALTER TABLE memctx.embedding_space ENABLE ROW LEVEL SECURITY;

--
-- Name: embedding_space embedding_space_read; Type: POLICY; Schema: memctx; Owner: -
--

CREATE POLICY embedding_space_read ON memctx.embedding_space FOR SELECT TO anon, authenticated USING (true);


--
-- Name: feedback; Type: ROW SECURITY; Schema: memctx; Owner: -
--

ALTER TABLE memctx.feedback ENABLE ROW LEVEL SECURITY;

--
-- Name: feedback feedback_owner; Type: POLICY; Schema: memctx; Owner: -
--

CREATE POLICY feedback_owner ON memctx.feedback TO authenticated USING ((user_id = ( SELECT auth.uid() AS uid))) WITH CHECK ((user_id = ( SELECT auth.uid() AS uid)));


--
-- Name: idempotency_keys; Type: ROW SECURITY; Schema: memctx; Owner: -
--

ALTER TABLE memctx.idempotency_keys ENABLE ROW LEVEL SECURITY;

--
-- Name: idempotency_keys idempotency_keys_owner; Type: POLICY; Schema: memctx; Owner: -
--

CREATE POLICY idempotency_keys_owner ON memctx.idempotency_keys TO authenticated USING ((user_id = ( SELECT auth.uid() AS uid))) WITH CHECK (((user_id = ( SELECT auth.uid() AS uid)) AND (EXISTS ( SELECT 1
   FROM memctx.conversations c
  WHERE ((c.id = idempotency_keys.conversation_id) AND (c.user_id = ( SELECT auth.uid() AS uid)))))));


--
-- Name: message_codes; Type: ROW SECURITY; Schema: memctx; Owner: -
--

ALTER TABLE memctx.message_codes ENABLE ROW LEVEL SECURITY;

--
-- Name: message_codes message_codes_owner; Type: POLICY; Schema: memctx; Owner: -
--

CREATE POLICY message_codes_owner ON memctx.message_codes FOR SELECT TO authenticated USING ((user_id = ( SELECT auth.uid() AS uid)));


--
-- Name: message_terms; Type: ROW SECURITY; Schema: memctx; Owner: -
--

ALTER TABLE memctx.message_terms ENABLE ROW LEVEL SECURITY;

--
-- Name: message_terms message_terms_owner; Type: POLICY; Schema: memctx; Owner: -
--

CREATE POLICY message_terms_owner ON memctx.message_terms FOR SELECT TO authenticated USING ((user_id = ( SELECT auth.uid() AS uid)));


--
-- Name: messages; Type: ROW SECURITY; Schema: memctx; Owner: -
--

ALTER TABLE memctx.messages ENABLE ROW LEVEL SECURITY;

--
-- Name: messages messages_owner; Type: POLICY; Schema: memctx; Owner: -
--

CREATE POLICY messages_owner ON memctx.messages TO authenticated USING ((user_id = ( SELECT auth.uid() AS uid))) WITH CHECK (((user_id = ( SELECT auth.uid() AS uid)) AND (EXISTS ( SELECT 1
   FROM memctx.conversations c
  WHERE ((c.id = messages.conversation_id) AND (c.user_id = ( SELECT auth.uid() AS uid)))))));


--
-- Name: outbox; Type: ROW SECURITY; Schema: memctx; Owner: -
--

ALTER TABLE memctx.outbox ENABLE ROW LEVEL SECURITY;

--
-- Name: outbox outbox_owner; Type: POLICY; Schema: memctx; Owner: -
--

CREATE POLICY outbox_owner ON memctx.outbox TO authenticated USING ((user_id = ( SELECT auth.uid() AS uid))) WITH CHECK (((user_id = ( SELECT auth.uid() AS uid)) AND (EXISTS ( SELECT 1
   FROM memctx.conversations c
  WHERE ((c.id = outbox.conversation_id) AND (c.user_id = ( SELECT auth.uid() AS uid)))))));


--
-- Name: procedure_sources; Type: ROW SECURITY; Schema: memctx; Owner: -
--

ALTER TABLE memctx.procedure_sources ENABLE ROW LEVEL SECURITY;

--
-- Name: procedure_sources procedure_sources_owner; Type: POLICY; Schema: memctx; Owner: -
--

CREATE POLICY procedure_sources_owner ON memctx.procedure_sources TO authenticated USING ((user_id = ( SELECT auth.uid() AS uid))) WITH CHECK ((user_id = ( SELECT auth.uid() AS uid)));


--
-- Name: procedures; Type: ROW SECURITY; Schema: memctx; Owner: -
--

ALTER TABLE memctx.procedures ENABLE ROW LEVEL SECURITY;

--
-- Name: procedures procedures_owner; Type: POLICY; Schema: memctx; Owner: -
--

CREATE POLICY procedures_owner ON memctx.procedures TO authenticated USING ((user_id = ( SELECT auth.uid() AS uid))) WITH CHECK ((user_id = ( SELECT auth.uid() AS uid)));


--
-- Name: profile_items; Type: ROW SECURITY; Schema: memctx; Owner: -
--

ALTER TABLE memctx.profile_items ENABLE ROW LEVEL SECURITY;

--
-- Name: profile_items profile_items_owner; Type: POLICY; Schema: memctx; Owner: -
--

CREATE POLICY profile_items_owner ON memctx.profile_items TO authenticated USING ((user_id = ( SELECT auth.uid() AS uid))) WITH CHECK ((user_id = ( SELECT auth.uid() AS uid)));


--
-- Name: profile_progress; Type: ROW SECURITY; Schema: memctx; Owner: -
--

ALTER TABLE memctx.profile_progress ENABLE ROW LEVEL SECURITY;

--
-- Name: profile_progress profile_progress_owner; Type: POLICY; Schema: memctx; Owner: -
--

CREATE POLICY profile_progress_owner ON memctx.profile_progress TO authenticated USING ((user_id = ( SELECT auth.uid() AS uid))) WITH CHECK ((user_id = ( SELECT auth.uid() AS uid)));


--
-- Name: profile_sources; Type: ROW SECURITY; Schema: memctx; Owner: -
--

ALTER TABLE memctx.profile_sources ENABLE ROW LEVEL SECURITY;

--
-- Name: profile_sources profile_sources_owner; Type: POLICY; Schema: memctx; Owner: -
--

CREATE POLICY profile_sources_owner ON memctx.profile_sources TO authenticated USING ((user_id = ( SELECT auth.uid() AS uid))) WITH CHECK ((user_id = ( SELECT auth.uid() AS uid)));


--
-- Name: search_cache; Type: ROW SECURITY; Schema: memctx; Owner: -
--

ALTER TABLE memctx.search_cache ENABLE ROW LEVEL SECURITY;

--
-- Name: search_cache search_cache_owner; Type: POLICY; Schema: memctx; Owner: -
--

CREATE POLICY search_cache_owner ON memctx.search_cache TO authenticated USING ((user_id = ( SELECT auth.uid() AS uid))) WITH CHECK ((user_id = ( SELECT auth.uid() AS uid)));


--
-- Name: shadow_requests; Type: ROW SECURITY; Schema: memctx; Owner: -
--

ALTER TABLE memctx.shadow_requests ENABLE ROW LEVEL SECURITY;

--
-- Name: shadow_requests shadow_requests_owner; Type: POLICY; Schema: memctx; Owner: -
--

CREATE POLICY shadow_requests_owner ON memctx.shadow_requests TO authenticated USING ((user_id = ( SELECT auth.uid() AS uid))) WITH CHECK (((user_id = ( SELECT auth.uid() AS uid)) AND (EXISTS ( SELECT 1
   FROM memctx.conversations c
  WHERE ((c.id = shadow_requests.conversation_id) AND (c.user_id = ( SELECT auth.uid() AS uid)))))));


--
-- Name: summaries; Type: ROW SECURITY; Schema: memctx; Owner: -
--

ALTER TABLE memctx.summaries ENABLE ROW LEVEL SECURITY;

--
-- Name: summaries summaries_owner; Type: POLICY; Schema: memctx; Owner: -
--

CREATE POLICY summaries_owner ON memctx.summaries TO authenticated USING ((user_id = ( SELECT auth.uid() AS uid))) WITH CHECK (((user_id = ( SELECT auth.uid() AS uid)) AND (EXISTS ( SELECT 1
   FROM memctx.conversations c
  WHERE ((c.id = summaries.conversation_id) AND (c.user_id = ( SELECT auth.uid() AS uid)))))));


--
-- Name: summary_boards; Type: ROW SECURITY; Schema: memctx; Owner: -
--

ALTER TABLE memctx.summary_boards ENABLE ROW LEVEL SECURITY;

--
-- Name: summary_boards summary_boards_owner; Type: POLICY; Schema: memctx; Owner: -
--

CREATE POLICY summary_boards_owner ON memctx.summary_boards TO authenticated USING ((user_id = ( SELECT auth.uid() AS uid))) WITH CHECK (((user_id = ( SELECT auth.uid() AS uid)) AND (EXISTS ( SELECT 1
   FROM memctx.conversations c
  WHERE ((c.id = summary_boards.conversation_id) AND (c.user_id = ( SELECT auth.uid() AS uid)))))));


--
-- Name: working_memory_chunks; Type: ROW SECURITY; Schema: memctx; Owner: -
--

ALTER TABLE memctx.working_memory_chunks ENABLE ROW LEVEL SECURITY;

--
-- Name: working_memory_chunks working_memory_chunks_owner; Type: POLICY; Schema: memctx; Owner: -
--

CREATE POLICY working_memory_chunks_owner ON memctx.working_memory_chunks TO authenticated USING ((user_id = ( SELECT auth.uid() AS uid))) WITH CHECK (((user_id = ( SELECT auth.uid() AS uid)) AND (EXISTS ( SELECT 1
   FROM memctx.conversations c
  WHERE ((c.id = working_memory_chunks.conversation_id) AND (c.user_id = ( SELECT auth.uid() AS uid)))))));


--
-- Name: SCHEMA auth; Type: ACL; Schema: -; Owner: -
--

GRANT USAGE ON SCHEMA auth TO anon;
GRANT USAGE ON SCHEMA auth TO authenticated;
GRANT USAGE ON SCHEMA auth TO service_role;


--
-- Name: SCHEMA memctx; Type: ACL; Schema: -; Owner: -
--

GRANT USAGE ON SCHEMA memctx TO authenticated;
GRANT USAGE ON SCHEMA memctx TO service_role;
GRANT USAGE ON SCHEMA memctx TO anon;


--
-- Name: FUNCTION uid(); Type: ACL; Schema: auth; Owner: -
--

GRANT ALL ON FUNCTION auth.uid() TO anon;
GRANT ALL ON FUNCTION auth.uid() TO authenticated;
GRANT ALL ON FUNCTION auth.uid() TO service_role;


--
-- Name: TABLE api_keys; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE memctx.api_keys TO service_role;
GRANT DELETE ON TABLE memctx.api_keys TO authenticated;


--
-- Name: COLUMN api_keys.id; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT(id) ON TABLE memctx.api_keys TO authenticated;


--
-- Name: COLUMN api_keys.user_id; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT(user_id) ON TABLE memctx.api_keys TO authenticated;


--
-- Name: COLUMN api_keys.name; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT(name) ON TABLE memctx.api_keys TO authenticated;


--
-- Name: COLUMN api_keys.prefix; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT(prefix) ON TABLE memctx.api_keys TO authenticated;


--
-- Name: COLUMN api_keys.created_at; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT(created_at) ON TABLE memctx.api_keys TO authenticated;


--
-- Name: COLUMN api_keys.revoked_at; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT(revoked_at) ON TABLE memctx.api_keys TO authenticated;


--
-- Name: TABLE context_requests; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT,DELETE ON TABLE memctx.context_requests TO authenticated;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE memctx.context_requests TO service_role;


--
-- Name: COLUMN context_requests.user_id; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(user_id) ON TABLE memctx.context_requests TO authenticated;


--
-- Name: COLUMN context_requests.conversation_id; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(conversation_id) ON TABLE memctx.context_requests TO authenticated;


--
-- Name: COLUMN context_requests.kind; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(kind) ON TABLE memctx.context_requests TO authenticated;


--
-- Name: COLUMN context_requests.created_at; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(created_at) ON TABLE memctx.context_requests TO authenticated;


--
-- Name: COLUMN context_requests.model; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(model) ON TABLE memctx.context_requests TO authenticated;


--
-- Name: COLUMN context_requests.token_budget; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(token_budget) ON TABLE memctx.context_requests TO authenticated;


--
-- Name: COLUMN context_requests.tokens_used; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(tokens_used) ON TABLE memctx.context_requests TO authenticated;


--
-- Name: COLUMN context_requests.full_history_tokens; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(full_history_tokens) ON TABLE memctx.context_requests TO authenticated;


--
-- Name: COLUMN context_requests.timings_ms; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(timings_ms) ON TABLE memctx.context_requests TO authenticated;


--
-- Name: COLUMN context_requests.sources; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(sources) ON TABLE memctx.context_requests TO authenticated;


--
-- Name: COLUMN context_requests.upstream_status; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(upstream_status) ON TABLE memctx.context_requests TO authenticated;


--
-- Name: TABLE conversations; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT,DELETE ON TABLE memctx.conversations TO authenticated;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE memctx.conversations TO service_role;


--
-- Name: COLUMN conversations.user_id; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(user_id),UPDATE(user_id) ON TABLE memctx.conversations TO authenticated;


--
-- Name: COLUMN conversations.external_id; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(external_id),UPDATE(external_id) ON TABLE memctx.conversations TO authenticated;


--
-- Name: COLUMN conversations.title; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(title),UPDATE(title) ON TABLE memctx.conversations TO authenticated;


--
-- Name: COLUMN conversations.metadata; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(metadata),UPDATE(metadata) ON TABLE memctx.conversations TO authenticated;


--
-- Name: COLUMN conversations.message_count; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(message_count),UPDATE(message_count) ON TABLE memctx.conversations TO authenticated;


--
-- Name: COLUMN conversations.last_seq; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(last_seq),UPDATE(last_seq) ON TABLE memctx.conversations TO authenticated;


--
-- Name: COLUMN conversations.created_at; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(created_at),UPDATE(created_at) ON TABLE memctx.conversations TO authenticated;


--
-- Name: COLUMN conversations.last_message_at; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(last_message_at),UPDATE(last_message_at) ON TABLE memctx.conversations TO authenticated;


--
-- Name: COLUMN conversations.closed_at; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(closed_at),UPDATE(closed_at) ON TABLE memctx.conversations TO authenticated;


--
-- Name: COLUMN conversations.lexeme_count; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(lexeme_count),UPDATE(lexeme_count) ON TABLE memctx.conversations TO authenticated;


--
-- Name: COLUMN conversations.speakers; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(speakers),UPDATE(speakers) ON TABLE memctx.conversations TO authenticated;


--
-- Name: COLUMN conversations.proxy_mode; Type: ACL; Schema: memctx; Owner: -
--

GRANT UPDATE(proxy_mode) ON TABLE memctx.conversations TO authenticated;


--
-- Name: TABLE messages; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT,DELETE ON TABLE memctx.messages TO authenticated;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE memctx.messages TO service_role;


--
-- Name: COLUMN messages.conversation_id; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(conversation_id),UPDATE(conversation_id) ON TABLE memctx.messages TO authenticated;


--
-- Name: COLUMN messages.user_id; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(user_id),UPDATE(user_id) ON TABLE memctx.messages TO authenticated;


--
-- Name: COLUMN messages.seq; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(seq),UPDATE(seq) ON TABLE memctx.messages TO authenticated;


--
-- Name: COLUMN messages.role; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(role),UPDATE(role) ON TABLE memctx.messages TO authenticated;


--
-- Name: COLUMN messages.content; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(content),UPDATE(content) ON TABLE memctx.messages TO authenticated;


--
-- Name: COLUMN messages.text; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(text),UPDATE(text) ON TABLE memctx.messages TO authenticated;


--
-- Name: COLUMN messages.external_id; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(external_id),UPDATE(external_id) ON TABLE memctx.messages TO authenticated;


--
-- Name: COLUMN messages.token_count; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(token_count),UPDATE(token_count) ON TABLE memctx.messages TO authenticated;


--
-- Name: COLUMN messages.embedding; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(embedding),UPDATE(embedding) ON TABLE memctx.messages TO authenticated;


--
-- Name: COLUMN messages.created_at; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(created_at),UPDATE(created_at) ON TABLE memctx.messages TO authenticated;


--
-- Name: COLUMN messages.inserted_at; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(inserted_at),UPDATE(inserted_at) ON TABLE memctx.messages TO authenticated;


--
-- Name: COLUMN messages.metadata; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(metadata),UPDATE(metadata) ON TABLE memctx.messages TO authenticated;


--
-- Name: TABLE summaries; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT,DELETE ON TABLE memctx.summaries TO authenticated;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE memctx.summaries TO service_role;


--
-- Name: COLUMN summaries.conversation_id; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(conversation_id),UPDATE(conversation_id) ON TABLE memctx.summaries TO authenticated;


--
-- Name: COLUMN summaries.user_id; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(user_id),UPDATE(user_id) ON TABLE memctx.summaries TO authenticated;


--
-- Name: COLUMN summaries.level; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(level),UPDATE(level) ON TABLE memctx.summaries TO authenticated;


--
-- Name: COLUMN summaries.is_master; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(is_master),UPDATE(is_master) ON TABLE memctx.summaries TO authenticated;


--
-- Name: COLUMN summaries.content; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(content),UPDATE(content) ON TABLE memctx.summaries TO authenticated;


--
-- Name: COLUMN summaries.source_kind; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(source_kind),UPDATE(source_kind) ON TABLE memctx.summaries TO authenticated;


--
-- Name: COLUMN summaries.source_ids; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(source_ids),UPDATE(source_ids) ON TABLE memctx.summaries TO authenticated;


--
-- Name: COLUMN summaries.first_seq; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(first_seq),UPDATE(first_seq) ON TABLE memctx.summaries TO authenticated;


--
-- Name: COLUMN summaries.last_seq; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(last_seq),UPDATE(last_seq) ON TABLE memctx.summaries TO authenticated;


--
-- Name: COLUMN summaries.token_count; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(token_count),UPDATE(token_count) ON TABLE memctx.summaries TO authenticated;


--
-- Name: COLUMN summaries.embedding; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(embedding),UPDATE(embedding) ON TABLE memctx.summaries TO authenticated;


--
-- Name: COLUMN summaries.summarizer; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(summarizer),UPDATE(summarizer) ON TABLE memctx.summaries TO authenticated;


--
-- Name: COLUMN summaries.edited; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(edited),UPDATE(edited) ON TABLE memctx.summaries TO authenticated;


--
-- Name: COLUMN summaries.superseded_by; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(superseded_by),UPDATE(superseded_by) ON TABLE memctx.summaries TO authenticated;


--
-- Name: COLUMN summaries.superseded_at; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(superseded_at),UPDATE(superseded_at) ON TABLE memctx.summaries TO authenticated;


--
-- Name: COLUMN summaries.created_at; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(created_at),UPDATE(created_at) ON TABLE memctx.summaries TO authenticated;


--
-- Name: COLUMN summaries.updated_at; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(updated_at),UPDATE(updated_at) ON TABLE memctx.summaries TO authenticated;


--
-- Name: COLUMN summaries.metadata; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(metadata),UPDATE(metadata) ON TABLE memctx.summaries TO authenticated;


--
-- Name: TABLE summary_boards; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE memctx.summary_boards TO authenticated;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE memctx.summary_boards TO service_role;


--
-- Name: TABLE conversation_overview; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT ON TABLE memctx.conversation_overview TO authenticated;
GRANT SELECT ON TABLE memctx.conversation_overview TO service_role;


--
-- Name: TABLE conversation_summaries; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE memctx.conversation_summaries TO authenticated;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE memctx.conversation_summaries TO service_role;


--
-- Name: TABLE embedding_space; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT ON TABLE memctx.embedding_space TO anon;
GRANT SELECT ON TABLE memctx.embedding_space TO authenticated;
GRANT SELECT ON TABLE memctx.embedding_space TO service_role;


--
-- Name: TABLE feedback; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE memctx.feedback TO service_role;
GRANT SELECT,INSERT,DELETE ON TABLE memctx.feedback TO authenticated;


--
-- Name: TABLE procedures; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE memctx.procedures TO service_role;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE memctx.procedures TO authenticated;


--
-- Name: TABLE profile_items; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE memctx.profile_items TO service_role;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE memctx.profile_items TO authenticated;


--
-- Name: TABLE feedback_log; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT ON TABLE memctx.feedback_log TO authenticated;
GRANT SELECT ON TABLE memctx.feedback_log TO service_role;


--
-- Name: TABLE idempotency_keys; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE memctx.idempotency_keys TO authenticated;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE memctx.idempotency_keys TO service_role;


--
-- Name: TABLE live_summaries; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT ON TABLE memctx.live_summaries TO authenticated;
GRANT SELECT ON TABLE memctx.live_summaries TO service_role;


--
-- Name: TABLE message_codes; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT ON TABLE memctx.message_codes TO authenticated;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE memctx.message_codes TO service_role;


--
-- Name: TABLE message_terms; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT ON TABLE memctx.message_terms TO authenticated;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE memctx.message_terms TO service_role;


--
-- Name: TABLE outbox; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT,DELETE ON TABLE memctx.outbox TO authenticated;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE memctx.outbox TO service_role;


--
-- Name: COLUMN outbox.user_id; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(user_id),UPDATE(user_id) ON TABLE memctx.outbox TO authenticated;


--
-- Name: COLUMN outbox.conversation_id; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(conversation_id),UPDATE(conversation_id) ON TABLE memctx.outbox TO authenticated;


--
-- Name: COLUMN outbox.kind; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(kind),UPDATE(kind) ON TABLE memctx.outbox TO authenticated;


--
-- Name: COLUMN outbox.message_id; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(message_id),UPDATE(message_id) ON TABLE memctx.outbox TO authenticated;


--
-- Name: COLUMN outbox.seq; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(seq),UPDATE(seq) ON TABLE memctx.outbox TO authenticated;


--
-- Name: COLUMN outbox.created_at; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(created_at),UPDATE(created_at) ON TABLE memctx.outbox TO authenticated;


--
-- Name: COLUMN outbox.claimed_at; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(claimed_at),UPDATE(claimed_at) ON TABLE memctx.outbox TO authenticated;


--
-- Name: COLUMN outbox.claimed_by; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(claimed_by),UPDATE(claimed_by) ON TABLE memctx.outbox TO authenticated;


--
-- Name: COLUMN outbox.processed_at; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(processed_at),UPDATE(processed_at) ON TABLE memctx.outbox TO authenticated;


--
-- Name: COLUMN outbox.attempts; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(attempts),UPDATE(attempts) ON TABLE memctx.outbox TO authenticated;


--
-- Name: COLUMN outbox.last_error; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(last_error),UPDATE(last_error) ON TABLE memctx.outbox TO authenticated;


--
-- Name: SEQUENCE outbox_id_seq; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT,USAGE ON SEQUENCE memctx.outbox_id_seq TO authenticated;
GRANT SELECT,USAGE ON SEQUENCE memctx.outbox_id_seq TO service_role;


--
-- Name: TABLE procedure_sources; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE memctx.procedure_sources TO service_role;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE memctx.procedure_sources TO authenticated;


--
-- Name: TABLE profile_progress; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE memctx.profile_progress TO service_role;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE memctx.profile_progress TO authenticated;


--
-- Name: TABLE profile_sources; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE memctx.profile_sources TO service_role;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE memctx.profile_sources TO authenticated;


--
-- Name: TABLE profile_storage; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT ON TABLE memctx.profile_storage TO authenticated;
GRANT SELECT ON TABLE memctx.profile_storage TO service_role;


--
-- Name: TABLE search_cache; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE memctx.search_cache TO authenticated;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE memctx.search_cache TO service_role;


--
-- Name: TABLE shadow_requests; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT,INSERT,DELETE ON TABLE memctx.shadow_requests TO authenticated;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE memctx.shadow_requests TO service_role;


--
-- Name: TABLE shadow_comparison; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT ON TABLE memctx.shadow_comparison TO authenticated;
GRANT SELECT ON TABLE memctx.shadow_comparison TO service_role;


--
-- Name: TABLE token_savings; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT ON TABLE memctx.token_savings TO authenticated;
GRANT SELECT ON TABLE memctx.token_savings TO service_role;


--
-- Name: TABLE worker_backlog; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT ON TABLE memctx.worker_backlog TO authenticated;
GRANT SELECT ON TABLE memctx.worker_backlog TO service_role;


--
-- Name: TABLE working_memory_chunks; Type: ACL; Schema: memctx; Owner: -
--

GRANT SELECT,DELETE ON TABLE memctx.working_memory_chunks TO authenticated;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE memctx.working_memory_chunks TO service_role;


--
-- Name: COLUMN working_memory_chunks.conversation_id; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(conversation_id),UPDATE(conversation_id) ON TABLE memctx.working_memory_chunks TO authenticated;


--
-- Name: COLUMN working_memory_chunks.user_id; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(user_id),UPDATE(user_id) ON TABLE memctx.working_memory_chunks TO authenticated;


--
-- Name: COLUMN working_memory_chunks.chunk_text; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(chunk_text),UPDATE(chunk_text) ON TABLE memctx.working_memory_chunks TO authenticated;


--
-- Name: COLUMN working_memory_chunks.message_ids; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(message_ids),UPDATE(message_ids) ON TABLE memctx.working_memory_chunks TO authenticated;


--
-- Name: COLUMN working_memory_chunks.importance; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(importance),UPDATE(importance) ON TABLE memctx.working_memory_chunks TO authenticated;


--
-- Name: COLUMN working_memory_chunks.chunk_type; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(chunk_type),UPDATE(chunk_type) ON TABLE memctx.working_memory_chunks TO authenticated;


--
-- Name: COLUMN working_memory_chunks.token_count; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(token_count),UPDATE(token_count) ON TABLE memctx.working_memory_chunks TO authenticated;


--
-- Name: COLUMN working_memory_chunks.embedding; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(embedding),UPDATE(embedding) ON TABLE memctx.working_memory_chunks TO authenticated;


--
-- Name: COLUMN working_memory_chunks.expires_at; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(expires_at),UPDATE(expires_at) ON TABLE memctx.working_memory_chunks TO authenticated;


--
-- Name: COLUMN working_memory_chunks.created_at; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(created_at),UPDATE(created_at) ON TABLE memctx.working_memory_chunks TO authenticated;


--
-- Name: COLUMN working_memory_chunks.message_id; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(message_id),UPDATE(message_id) ON TABLE memctx.working_memory_chunks TO authenticated;


--
-- Name: COLUMN working_memory_chunks.part; Type: ACL; Schema: memctx; Owner: -
--

GRANT INSERT(part),UPDATE(part) ON TABLE memctx.working_memory_chunks TO authenticated;


--
-- PostgreSQL database dump complete
--


--
-- The full-text index of messages, by what the server has (migrations/0014, 0026)
--

DO $$
BEGIN
  IF EXISTS (SELECT FROM pg_available_extensions WHERE name = 'btree_gin') THEN
    CREATE EXTENSION IF NOT EXISTS btree_gin WITH SCHEMA public;
    CREATE INDEX message_terms_scope_tsv_idx ON memctx.message_terms USING gin (user_id, conversation_id, tsv);
  ELSE
    CREATE INDEX message_terms_tsv_idx ON memctx.message_terms USING gin (tsv);
  END IF;
END
$$;
