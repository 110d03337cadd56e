-- memctx 0018: a message is dated within years every reader can handle.
--
-- A message's created_at comes from the client (the API, ingest, SQL). Postgres stores dates from
-- 4713 BC to 294276 AD, Python's datetime only years 1 to 9999, and a date at either end of that
-- moves out of it once it is read in another time zone (9999-12-31T23:59:59-14:00 is in the year
-- 10000 in UTC): such a message made every read of its conversation, the user's user-wide search
-- and the worker's jobs fail. Dates from the year 1000 up to 9000 are accepted; the library and the
-- API refuse others with the same bounds before they reach the database (memctx.models).
--
-- NOT VALID: rows already stored are not checked (the table is not scanned under a lock); every
-- new or updated row is.

alter table memctx.messages
  add constraint messages_created_at_range
  check (created_at >= timestamptz '1000-01-01 00:00:00+00' and created_at < timestamptz '9000-01-01 00:00:00+00')
  not valid;
