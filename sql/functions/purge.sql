-- herald.purge(older_than, now) — delete finished messages (sent, dead, cancelled)
-- whose finished_at is more than `older_than` ago; returns how many were deleted.
-- Retention: run it from cron / pg_cron, e.g. herald.purge('30 days').
-- Index: none by default: a scan of herald.messages (release 16 dropped
-- messages_finished_idx from the delivery path; 0.3 s per 1,000,000 rows here). A DBA
-- can re-create it (026_finished_index.sql, README "Indexes") and purge uses it.
-- Locks: the deleted rows. Errors: HR012 older_than (NULL or negative).
-- Admin only (herald_admin).
CREATE OR REPLACE FUNCTION herald.purge(older_than interval, now timestamptz DEFAULT now())
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  deleted bigint;
BEGIN
  IF older_than IS NULL OR older_than < interval '0' THEN
    PERFORM herald._reject('HR012', 'older_than', 'must be a non-negative interval');
  END IF;
  DELETE FROM herald.messages m
  WHERE m.status IN ('sent', 'dead', 'cancelled')
    AND m.finished_at < purge.now - purge.older_than;
  GET DIAGNOSTICS deleted = ROW_COUNT;
  RETURN deleted;
END
$$;

REVOKE ALL ON FUNCTION herald.purge(interval, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.purge(interval, timestamptz) TO herald_admin;
