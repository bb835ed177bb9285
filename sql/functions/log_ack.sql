-- herald.log_ack("group", partition, upto, now) — commit a group's progress on one
-- partition: every event of the partition up to offset `upto` is done. Returns the
-- committed offset. Acks only move forward: an `upto` at or below the committed
-- offset changes nothing (a repeated ack is harmless).
-- Call it in the transaction that called log_read (it waits for the offset row if
-- another transaction holds it).
-- Errors: 22V13 group, 22V14 partition, 22V15 upto (NULL, or beyond the last
-- sequenced offset). Locks: the offset row. SECURITY DEFINER for herald_consumer.
CREATE OR REPLACE FUNCTION herald.log_ack("group" text, partition integer, upto bigint, now timestamptz DEFAULT now())
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => log_ack.now); -- first: a forged clock changes nothing
  cp record;
  log_end bigint;
BEGIN
  cp := herald._consumer_partition("group", partition, false);
  SELECT c.next_offset - 1 INTO log_end FROM herald.log_counter c;
  IF upto IS NULL OR upto > log_end THEN
    PERFORM herald._reject('22V15', 'upto',
      format('%s is beyond the end of the log (offset %s)', coalesce(upto::text, 'NULL'), log_end));
  END IF;
  IF upto <= cp.committed_offset THEN
    RETURN cp.committed_offset;
  END IF;
  UPDATE herald.consumer_offsets o
  SET committed_offset = upto, updated_at = log_ack.now
  WHERE o.group_name = "group" AND o.partition = log_ack.partition;
  RETURN upto;
END
$$;

REVOKE ALL ON FUNCTION herald.log_ack(text, integer, bigint, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.log_ack(text, integer, bigint, timestamptz) TO herald_consumer, herald_admin;
COMMENT ON FUNCTION herald.log_ack(text, integer, bigint, timestamptz) IS
  'Commit a consumer group''s progress on one partition.';
