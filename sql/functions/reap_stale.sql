-- herald.reap_stale(now) — take back messages whose lease expired (the worker crashed
-- or lost its connection) and end queued messages past their expires_at; returns how
-- many messages changed.
-- An expired lease: back to 'queued' at now (the attempt it used counts), 'dead' when
-- attempts >= max_attempts, 'expired' when now >= expires_at (these three recorded as
-- class transient, code 'lease_expired'), 'sent' when a provider's report stored its id
-- meanwhile (herald._mark_sent); lease_token cleared, so the old worker's late report
-- changes nothing. A queued or held message with expires_at <= now: 'expired'.
-- 'dead' and 'expired' log events in the same statement; runners and log consumers
-- are woken (herald._notify). Rows locked by a concurrent call are skipped (SKIP
-- LOCKED). At most 10,000 rows of each kind per call: call it again while it returns
-- 10,000 or more. Safe from many workers at once. Releases the ordering keys of what
-- it ended, and settles those noted in herald.ordering_rechecks (not counted).
-- Index: messages_in_flight_idx, messages_expiry_idx. Locks: the changed rows;
-- ROW EXCLUSIVE on herald.log_statements. SECURITY DEFINER for herald_worker.
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
  finished boolean;
  ready boolean;
  v_ordered bigint[];
  v_taken bigint[];
  v_taken_tokens bigint[];
BEGIN
  WITH lapsed AS (
    SELECT e.id, e.lease_token, e.provider_message_id IS NOT NULL AS taken
    FROM herald.messages e
    WHERE e.status = 'processing'
      AND e.lease_expires_at < reap_stale.now
    ORDER BY e.lease_expires_at
    LIMIT 10000
    FOR NO KEY UPDATE SKIP LOCKED
  ), reaped AS (
    UPDATE herald.messages m
    SET status = d.next_status,
        run_at = CASE WHEN d.next_status = 'queued' THEN reap_stale.now ELSE m.run_at END,
        finished_at = CASE WHEN d.next_status <> 'queued' THEN reap_stale.now END,
        lease_token = NULL,
        lease_expires_at = NULL,
        last_error = 'lease expired',
        last_error_class = 'transient',
        last_error_code = 'lease_expired',
        errors = herald._append_error(m.errors, jsonb_build_object(
                   'at', reap_stale.now, 'attempt', m.attempts, 'class', 'transient',
                   'code', 'lease_expired', 'error', 'lease expired', 'worker', m.leased_by))
    FROM (SELECT x.id, CASE WHEN x.attempts >= x.max_attempts THEN 'dead'
                            WHEN x.expires_at <= reap_stale.now THEN 'expired'
                            ELSE 'queued' END AS next_status
          FROM lapsed l JOIN herald.messages x ON x.id = l.id
          WHERE NOT l.taken) AS d
    WHERE m.id = d.id
    RETURNING m.id, m.status, m.channel, m.recipient, m.ordering_key, m.attempts
  ), taken AS ( -- a provider reported taking it while the lease ran (record_delivery_events): sent
    SELECT l.id, l.lease_token FROM lapsed l WHERE l.taken
  ), overdue AS (
    SELECT e.id
    FROM herald.messages e
    WHERE e.status IN ('queued', 'held')
      AND e.expires_at <= reap_stale.now
    ORDER BY e.expires_at
    LIMIT 10000
    FOR NO KEY UPDATE SKIP LOCKED
  ), expired AS (
    UPDATE herald.messages m
    SET status = 'expired', finished_at = reap_stale.now
    FROM overdue o
    WHERE m.id = o.id
    RETURNING m.id, m.status, m.channel, m.recipient, m.ordering_key, m.attempts
  ), changes AS (
    SELECT * FROM reaped UNION ALL SELECT * FROM expired
  ), appended AS (
    INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes, details)
    SELECT r.status, reap_stale.now, array_agg(r.id ORDER BY r.id), array_agg(r.channel ORDER BY r.id),
           array_agg(herald._key_hash(r.ordering_key, r.recipient) ORDER BY r.id),
           array_agg(herald._event_detail(r.status, NULL, 'transient', 'lease expired', r.attempts) ORDER BY r.id)
    FROM changes r
    WHERE r.status IN ('dead', 'expired')
    GROUP BY r.status
  )
  SELECT count(*), bool_or(r.status <> 'queued'), bool_or(r.status = 'queued'),
         array_agg(r.id) FILTER (WHERE r.ordering_key IS NOT NULL AND r.status <> 'queued'),
         (SELECT array_agg(k.id) FROM taken k), (SELECT array_agg(k.lease_token) FROM taken k)
  INTO changed, finished, ready, v_ordered, v_taken, v_taken_tokens
  FROM changes r;
  IF v_taken IS NOT NULL THEN
    changed := changed + herald._mark_sent(ids => v_taken, lease_tokens => v_taken_tokens,
                                           provider_message_ids => NULL, now => reap_stale.now);
  END IF;
  IF finished THEN
    PERFORM herald._notify(ARRAY['herald_log']);
  END IF;
  IF ready THEN
    PERFORM herald._notify(ARRAY['herald_queue']);
  END IF;

  IF v_ordered IS NOT NULL THEN
    PERFORM herald._release_after(ids => v_ordered);
  END IF;
  IF EXISTS (SELECT FROM herald.ordering_rechecks) THEN
    PERFORM herald._settle_rechecks();
  END IF;
  RETURN changed;
END
$$;

REVOKE ALL ON FUNCTION herald.reap_stale(timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.reap_stale(timestamptz) TO herald_worker, herald_admin;
COMMENT ON FUNCTION herald.reap_stale(timestamptz) IS
  'Take back messages whose lease expired (queued again, dead or expired) and end queued messages past their expires_at.';
