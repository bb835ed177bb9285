-- herald.log_dead_letter("group", partition, "offset", error, now) — set aside one
-- event the group cannot process: copy it with the error into
-- herald.consumer_dead_letters and acknowledge it, so the group moves past it.
-- The event must be the partition's next unacknowledged event (the one log_read gave
-- first), so nothing else is skipped by mistake. Other groups are not affected.
-- Returns true. Errors: 22V12 error (NULL or empty), 22V13 group, 22V14 partition,
-- 22V15 offset (not the partition's next event).
-- Locks: the offset row. SECURITY DEFINER for herald_consumer.
CREATE OR REPLACE FUNCTION herald.log_dead_letter(
  "group" text,
  partition integer,
  "offset" bigint,
  error text,
  now timestamptz DEFAULT now()
) RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan -- see log_read
AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => log_dead_letter.now); -- first: a forged clock changes nothing
  cp record;
  ev herald.log;
BEGIN
  IF log_dead_letter."offset" IS NULL THEN
    PERFORM herald._reject('22V15', 'offset', 'must not be NULL');
  END IF;
  IF error IS NULL OR error = '' THEN
    PERFORM herald._reject('22V12', 'error', 'must say why the event is set aside');
  END IF;
  cp := herald._consumer_partition("group", partition, false);
  SELECT l.* INTO ev FROM herald._log_after(cp.committed_offset, cp.partitions, log_dead_letter.partition, 1) l;
  IF ev."offset" IS DISTINCT FROM log_dead_letter."offset" THEN
    PERFORM herald._reject('22V15', 'offset',
      format('%s is not the next event of partition %s (that is %s)',
             coalesce(log_dead_letter."offset"::text, 'NULL'), partition, coalesce(ev."offset"::text, 'none')));
  END IF;
  INSERT INTO herald.consumer_dead_letters
    (group_name, partition, "offset", message_id, kind, channel, at, detail, error, dead_at)
  VALUES ("group", partition, ev."offset", ev.message_id, ev.kind, ev.channel, ev.at, ev.detail,
          left(error, 2000), log_dead_letter.now);
  UPDATE herald.consumer_offsets o
  SET committed_offset = ev."offset", updated_at = log_dead_letter.now
  WHERE o.group_name = "group" AND o.partition = log_dead_letter.partition;
  RETURN true;
END
$$;

REVOKE ALL ON FUNCTION herald.log_dead_letter(text, integer, bigint, text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.log_dead_letter(text, integer, bigint, text, timestamptz) TO herald_consumer, herald_admin;
COMMENT ON FUNCTION herald.log_dead_letter(text, integer, bigint, text, timestamptz) IS
  'Set aside a partition''s next event into consumer_dead_letters and move past it.';
