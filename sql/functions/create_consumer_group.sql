-- herald.create_consumer_group("group", partitions, start, now) — register a consumer
-- group of herald.log; returns true when created, false when it already exists with
-- the same partition count (so a consumer can call it at every start).
--
-- partitions (1..256): the group reads partition p of the events whose
-- (key_hash & 2147483647) % partitions = p, key_hash being hashtext of the message's
-- ordering_key (or recipient): one key's events stay in one partition, in order.
-- start: 'latest' (default) begins after the last event sequenced now; 'earliest'
-- begins at the oldest event still in the log (after herald.log_truncate).
-- Errors: 22V12 group (herald._check_group: 1–100 of letters, digits, _ . : -, not
-- starting with herald.), partitions, start; 22V16 partitions when the group exists with
-- another partition count. Locks: inserts into consumer_groups / consumer_offsets.
-- SECURITY DEFINER for herald_consumer.
CREATE OR REPLACE FUNCTION herald.create_consumer_group(
  "group" text,
  partitions integer DEFAULT 1,
  start text DEFAULT 'latest',
  now timestamptz DEFAULT now()
) RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => create_consumer_group.now); -- first: a forged clock changes nothing
  existing integer;
  v_start bigint;
BEGIN
  PERFORM herald._check_group("group");
  IF partitions IS NULL OR partitions NOT BETWEEN 1 AND 256 THEN
    PERFORM herald._reject('22V12', 'partitions', format('%s is outside 1..256', coalesce(partitions::text, 'NULL')));
  END IF;
  IF start IS NULL OR start NOT IN ('latest', 'earliest') THEN
    PERFORM herald._reject('22V12', 'start', format('%s is neither latest nor earliest', coalesce(quote_literal(start), 'NULL')));
  END IF;

  SELECT g.partitions INTO existing FROM herald.consumer_groups g WHERE g.name = "group";
  IF FOUND THEN
    IF existing <> partitions THEN
      PERFORM herald._reject('22V16', 'partitions',
        format('consumer group %L exists with %s partitions, not %s', "group", existing, partitions));
    END IF;
    RETURN false;
  END IF;

  IF start = 'latest' THEN
    SELECT c.next_offset - 1 INTO v_start FROM herald.log_counter c;
  ELSE
    SELECT coalesce(min(s.first_offset) - 1, (SELECT c.next_offset - 1 FROM herald.log_counter c))
    INTO v_start FROM herald.log_statements s WHERE s.first_offset IS NOT NULL;
  END IF;

  INSERT INTO herald.consumer_groups (name, partitions, created_at)
  VALUES ("group", partitions, now)
  ON CONFLICT (name) DO NOTHING;
  IF NOT FOUND THEN
    RETURN false; -- created concurrently
  END IF;
  INSERT INTO herald.consumer_offsets (group_name, partition, committed_offset, updated_at)
  SELECT "group", p, v_start, now FROM generate_series(0, partitions - 1) p;
  RETURN true;
END
$$;

REVOKE ALL ON FUNCTION herald.create_consumer_group(text, integer, text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.create_consumer_group(text, integer, text, timestamptz) TO herald_consumer, herald_admin;
COMMENT ON FUNCTION herald.create_consumer_group(text, integer, text, timestamptz) IS
  'Register a consumer group of herald.log (idempotent).';
