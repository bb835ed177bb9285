-- herald.reap_stale(now) — take back messages whose lease expired (the worker crashed
-- or lost its connection); returns how many.
--
-- Each expired row goes back to 'queued' (run_at = now, so it is retried at once; the
-- attempt it used counts) or to 'dead' when attempts >= max_attempts. Its
-- lease_token is cleared, so the old worker's late complete/fail changes nothing.
-- The failure is recorded as class transient, code 'lease_expired'. A message that
-- goes 'dead' gets a 'dead' log event in the same statement; runners are woken for
-- the requeued ones and log consumers for the dead ones (herald._notify).
-- Rows locked by a concurrent complete/fail are skipped (SKIP LOCKED) and seen, if
-- still expired, by the next call. At most 10,000 rows per call; call it again while
-- it returns 10,000.
-- Safe to run from many workers at once; the runner runs it from one at a time.
-- Index: messages_lease_expiry_idx (lease_expires_at) WHERE status = 'processing'.
-- Locks: row locks on the reaped rows; ROW EXCLUSIVE on herald.log_statements. SECURITY DEFINER for herald_worker.
CREATE OR REPLACE FUNCTION herald.reap_stale(now timestamptz DEFAULT now())
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => reap_stale.now); -- first: a forged clock changes nothing
  changed integer;
  died boolean;
  ready boolean;
BEGIN
  WITH expired AS (
    SELECT e.id
    FROM herald.messages e
    WHERE e.status = 'processing'
      AND e.lease_expires_at < reap_stale.now
    ORDER BY e.lease_expires_at
    LIMIT 10000
    FOR UPDATE SKIP LOCKED
  ), reaped AS (
    UPDATE herald.messages m
    SET status = CASE WHEN m.attempts >= m.max_attempts THEN 'dead' ELSE 'queued' END,
        run_at = CASE WHEN m.attempts >= m.max_attempts THEN m.run_at ELSE reap_stale.now END,
        finished_at = CASE WHEN m.attempts >= m.max_attempts THEN reap_stale.now END,
        lease_token = NULL,
        lease_expires_at = NULL,
        last_error = 'lease expired',
        last_error_class = 'transient',
        last_error_code = 'lease_expired',
        errors = herald._append_error(m.errors, jsonb_build_object(
                   'at', reap_stale.now, 'attempt', m.attempts, 'class', 'transient',
                   'code', 'lease_expired', 'error', 'lease expired', 'worker', m.leased_by))
    FROM expired
    WHERE m.id = expired.id
    RETURNING m.id, m.status, m.channel, m.recipient, m.ordering_key, m.attempts
  ), appended AS (
    INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes, details)
    SELECT 'dead', reap_stale.now, array_agg(r.id ORDER BY r.id), array_agg(r.channel ORDER BY r.id),
           array_agg(herald._key_hash(r.ordering_key, r.recipient) ORDER BY r.id),
           array_agg(herald._event_detail('dead', NULL, 'transient', 'lease expired', r.attempts) ORDER BY r.id)
    FROM reaped r
    WHERE r.status = 'dead'
    HAVING count(*) > 0
  )
  SELECT count(*), bool_or(r.status = 'dead'), bool_or(r.status = 'queued')
  INTO changed, died, ready
  FROM reaped r;
  IF died THEN
    PERFORM herald._notify(ARRAY['herald_log']);
  END IF;
  IF ready THEN
    PERFORM herald._notify(ARRAY['herald_queue']);
  END IF;
  RETURN changed;
END
$$;

REVOKE ALL ON FUNCTION herald.reap_stale(timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.reap_stale(timestamptz) TO herald_worker, herald_admin;
COMMENT ON FUNCTION herald.reap_stale(timestamptz) IS
  'Take back messages whose lease expired: queued again, or dead when attempts are exhausted.';
