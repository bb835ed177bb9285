-- herald.count_pending(now) — count the unfinished messages (queued, held, processing)
-- of every producer with a max_pending into its herald.producers row (pending,
-- counted_at): what enqueue checks it against. Returns how many producers are at or
-- over their max_pending; 0 at once when no producer has one; NULL when another call
-- holds the counting lock (advisory 29384939513078786, "herald" 2). Runners call it
-- every HERALD_QUOTA_INTERVAL; a runner in another language, or pg_cron, may instead.
-- Index: messages_pending_producer_idx when an admin created it (docs/tuning.md), else
-- one scan of herald.messages. Locks: the rows of herald.producers it counts, and the
-- advisory lock, until the transaction ends. Errors: 42501 now (herald._check_clock).
-- SECURITY DEFINER for herald_worker and herald_admin.
CREATE OR REPLACE FUNCTION herald.count_pending(now timestamptz DEFAULT now())
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => count_pending.now); -- first: a forged clock changes nothing
  v_producers text[] := ARRAY(SELECT p.producer FROM herald.producers p WHERE p.max_pending IS NOT NULL);
  v_over integer;
BEGIN
  IF cardinality(v_producers) = 0 THEN
    RETURN 0;
  END IF;
  IF NOT pg_try_advisory_xact_lock(29384939513078786) THEN
    RETURN NULL;
  END IF;
  UPDATE herald.producers p
  SET pending = coalesce(c.n, 0), counted_at = count_pending.now
  FROM unnest(v_producers) AS q (producer)
  LEFT JOIN (SELECT m.producer, count(*) AS n
             FROM herald.messages m
             WHERE m.finished_at IS NULL AND m.producer = ANY (v_producers)
             GROUP BY m.producer) AS c ON c.producer = q.producer
  WHERE p.producer = q.producer;
  SELECT count(*) INTO v_over FROM herald.producers p WHERE p.pending >= p.max_pending;
  RETURN v_over;
END
$$;

REVOKE ALL ON FUNCTION herald.count_pending(timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.count_pending(timestamptz) TO herald_worker, herald_admin;
COMMENT ON FUNCTION herald.count_pending(timestamptz) IS
  'Count each limited producer''s unfinished messages for its max_pending (runners call it periodically).';
