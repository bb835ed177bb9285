-- herald.end_suspension(producer, now) — an admin ends a producer's suspension for
-- its bounce or complaint rate before suspended_until (the list is fixed): enqueue
-- takes it again, and its queued and held messages that herald.count_producers moved
-- to the suspension's end are due now. True when it was suspended. The rates are
-- counted again at the next count, so a producer still over them is suspended anew.
-- Errors: 22V12 producer or now NULL; 42501 below herald_admin. Index: producers_pkey, and
-- a scan of the producer's pending messages (messages_pending_producer_idx when
-- created). Locks: the producer's row and its moved messages.
CREATE OR REPLACE FUNCTION herald.end_suspension(producer text, now timestamptz DEFAULT now())
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => end_suspension.now); -- NULL refused
  v_until timestamptz;
BEGIN
  PERFORM herald._check_not_null(ARRAY['producer'], ARRAY[end_suspension.producer IS NOT NULL]);
  UPDATE herald.producers p
  SET suspended_until = NULL, suspended_reason = NULL, rated_at = NULL
  FROM (SELECT x.suspended_until FROM herald.producers x WHERE x.producer = end_suspension.producer FOR UPDATE) AS old
  WHERE p.producer = end_suspension.producer AND old.suspended_until > end_suspension.now
  RETURNING old.suspended_until INTO v_until;
  IF v_until IS NULL THEN
    RETURN false;
  END IF;
  UPDATE herald.messages m
  SET run_at = end_suspension.now
  WHERE m.producer = end_suspension.producer AND m.finished_at IS NULL
    AND m.status IN ('queued', 'held') AND m.run_at = v_until;
  PERFORM herald._notify(ARRAY['herald_queue']);
  RETURN true;
END
$$;

REVOKE ALL ON FUNCTION herald.end_suspension(text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.end_suspension(text, timestamptz) TO herald_admin;
COMMENT ON FUNCTION herald.end_suspension(text, timestamptz) IS
  'End a producer''s suspension for its bounce or complaint rate early: its enqueues are taken and its held-back messages are due now.';
