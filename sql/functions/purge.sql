-- herald.purge(older_than, now) — delete finished messages (finished_at set: sent,
-- dead, cancelled, expired, suppressed) whose finished_at is more than `older_than` ago, and the
-- delivery events received before that, and recipients' and producers' budgets whole
-- again (herald.recipient_buckets, herald.producer_buckets); returns how many messages. Retention: run it
-- from cron or pg_cron, e.g. herald.purge('30 days'). A replay of a purged event is
-- stored again as unknown (its message is gone too, or will be).
-- Index: none by default (delivered messages enter no index): a scan of
-- herald.messages; with messages_finished_idx created as docs/tuning.md says, a range
-- scan of it. Locks: the deleted rows. Errors: 22V12 older_than (NULL or negative).
-- Admin only (herald_admin).
CREATE OR REPLACE FUNCTION herald.purge(older_than interval, now timestamptz DEFAULT now())
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => purge.now); -- first: a forged clock changes nothing
  deleted bigint;
BEGIN
  IF older_than IS NULL OR older_than < interval '0' THEN
    PERFORM herald._reject('22V12', 'older_than', 'must be a non-negative interval');
  END IF;
  DELETE FROM herald.messages m
  WHERE m.finished_at < purge.now - purge.older_than;
  GET DIAGNOSTICS deleted = ROW_COUNT;
  DELETE FROM herald.delivery_events d WHERE d.received_at < purge.now - purge.older_than;
  -- Recipients whose budget is whole again: as if absent.
  DELETE FROM herald.recipient_buckets b WHERE b.clear_at <= purge.now;
  DELETE FROM herald.producer_buckets b WHERE b.clear_at <= purge.now;
  RETURN deleted;
END
$$;

REVOKE ALL ON FUNCTION herald.purge(interval, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.purge(interval, timestamptz) TO herald_admin;
COMMENT ON FUNCTION herald.purge(interval, timestamptz) IS
  'Delete finished messages and delivery events older than a bound, and recipients'' budgets whole again.';
