-- herald.log_read("group", partition, max) — up to `max` (1..10,000) events of one
-- partition of a consumer group after its committed offset, in offset order, none
-- skipped. It first locks the (group, partition) offset row for the caller's
-- transaction, and returns nothing at once when another consumer holds it (SKIP
-- LOCKED), so consumers that try every partition spread over them. Hold one
-- transaction from log_read to log_ack; a consumer that dies before acking reads the
-- same events again. Under READ COMMITTED it first sequences pending events
-- (herald.log_sequence), so the log moves on with no other process.
-- Index: log_statements_offset_idx (herald._log_after). Locks: the offset row; the
-- counter row when it sequenced. Errors: 22V12 max, 22V13 group, 22V14 partition.
-- SECURITY DEFINER for herald_consumer.
CREATE OR REPLACE FUNCTION herald.log_read("group" text, partition integer, max integer DEFAULT 100)
RETURNS TABLE (
  "offset" bigint,
  message_id bigint,
  kind text,
  channel text,
  at timestamptz,
  detail jsonb
)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan -- see claim_batch: a custom plan was made at every read
AS $$
#variable_conflict use_column
DECLARE
  cp record;
BEGIN
  IF log_read.max IS NULL OR log_read.max NOT BETWEEN 1 AND 10000 THEN
    PERFORM herald._reject('22V12', 'max', format('%s is outside 1..10000', coalesce(log_read.max::text, 'NULL')));
  END IF;
  PERFORM herald._listening('herald_log'); -- the caller may wait next: producers notify (herald._notify)
  cp := herald._consumer_partition(log_read."group", log_read.partition, true);
  IF cp.committed_offset IS NULL THEN
    RETURN; -- another consumer of this group holds the partition
  END IF;
  IF current_setting('transaction_isolation') = 'read committed' THEN
    PERFORM herald.log_sequence(10000);
  END IF;

  RETURN QUERY
  SELECT l."offset", l.message_id, l.kind, l.channel, l.at, l.detail
  FROM herald._log_after(cp.committed_offset, cp.partitions, log_read.partition, log_read.max) l;
END
$$;

REVOKE ALL ON FUNCTION herald.log_read(text, integer, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.log_read(text, integer, integer) TO herald_consumer, herald_admin;
COMMENT ON FUNCTION herald.log_read(text, integer, integer) IS
  'The next events of one partition of a consumer group, in offset order.';
