-- memctx 0006: the summary board's sections live in one jsonb column, `items`.
-- `items` holds one array per section of memctx.summarize.types.SECTIONS (key_facts, entities,
-- topics, action_items, pending_questions, constraints); each element is
-- {"text", "sources": [{"id", "external_id"}], "group"?, "edited"?}. Adding a section is a change
-- to that one definition, not to this table. Existing boards keep their lines, with no sources
-- (the next `memctx summarize CONV --regenerate` rebuilds them with sources); entities, stored
-- as {kind: [names]}, become items grouped by kind. The bookkeeping columns (current_summary,
-- message_count, last_seq, update_frequency, counts, version, updated_at) and the row-level
-- security and grants of the table stay as they are.

alter table memctx.summary_boards add column items jsonb not null default '{}'::jsonb;

update memctx.summary_boards b
   set items = jsonb_build_object(
     'key_facts', (select coalesce(jsonb_agg(jsonb_build_object('text', t, 'sources', '[]'::jsonb) order by n), '[]')
                     from jsonb_array_elements_text(b.key_facts) with ordinality as x(t, n)),
     'entities', (select coalesce(jsonb_agg(jsonb_build_object('text', t, 'sources', '[]'::jsonb, 'group', k.key)
                                            order by k.o, n), '[]')
                    from unnest(array['people', 'places', 'organizations', 'other']) with ordinality as k(key, o),
                         jsonb_array_elements_text(coalesce(b.entities -> k.key, '[]')) with ordinality as x(t, n)),
     'topics', (select coalesce(jsonb_agg(jsonb_build_object('text', t, 'sources', '[]'::jsonb) order by n), '[]')
                  from jsonb_array_elements_text(b.topics) with ordinality as x(t, n)),
     'action_items', (select coalesce(jsonb_agg(jsonb_build_object('text', t, 'sources', '[]'::jsonb) order by n), '[]')
                        from jsonb_array_elements_text(b.action_items) with ordinality as x(t, n)),
     'pending_questions', (select coalesce(jsonb_agg(jsonb_build_object('text', t, 'sources', '[]'::jsonb) order by n), '[]')
                             from jsonb_array_elements_text(b.pending_questions) with ordinality as x(t, n)),
     'constraints', (select coalesce(jsonb_agg(jsonb_build_object('text', t, 'sources', '[]'::jsonb) order by n), '[]')
                       from jsonb_array_elements_text(b.constraints) with ordinality as x(t, n)));

alter table memctx.summary_boards
  drop column key_facts, drop column entities, drop column topics, drop column action_items,
  drop column pending_questions, drop column constraints;
