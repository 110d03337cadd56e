-- memctx 0004: summaries written without an embedding are embedded later by a backfill.
-- A catch-up embeds the summaries still live at its end; those superseded during it (most of a
-- bulk catch-up's) are embedded in the background, oldest first. This partial index holds only
-- that backlog, so the backfill's claim and the backlog gauge never scan the whole table.
create index summaries_unembedded_idx on memctx.summaries (created_at, id) where embedding is null;
