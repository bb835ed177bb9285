-- herald._producer_bound(channel_bound, own_bound) — the bound on one producer's messages
-- being sent on a channel: its own (herald.producers.concurrency) in place of the
-- channel's producer_concurrency, on a channel that has one; NULL (no bound) on a
-- channel without. Used by herald._ready and herald.producer_backlog. Inlined SQL; no
-- index, no locks, no errors.
CREATE OR REPLACE FUNCTION herald._producer_bound(channel_bound integer, own_bound integer)
RETURNS integer
LANGUAGE sql
IMMUTABLE
RETURN CASE WHEN channel_bound IS NOT NULL THEN coalesce(own_bound, channel_bound) END;

REVOKE ALL ON FUNCTION herald._producer_bound(integer, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald._producer_bound(integer, integer) TO herald_admin; -- herald.producer_backlog's readers
COMMENT ON FUNCTION herald._producer_bound(integer, integer) IS
  'Private: a producer''s bound on its sends in flight on a channel (its own concurrency in place of the channel''s producer_concurrency).';
