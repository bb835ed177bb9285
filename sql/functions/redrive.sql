-- herald.redrive(ids, now) — send dead messages again: 'dead' -> 'queued' with
-- attempts reset to 0 and run_at = now; the error history is kept. Ids that are not
-- dead are ignored, and so are dead messages a provider reported on (an outcome: it
-- had the message, though no attempt heard so; sending again would be a duplicate).
-- Returns how many were redriven, and wakes the runners (herald._notify).
-- Index: the primary key. Locks: the rows. Admin only (herald_admin).
CREATE OR REPLACE FUNCTION herald.redrive(ids bigint[], now timestamptz DEFAULT now())
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => redrive.now); -- first: a forged clock changes nothing
  changed integer;
BEGIN
  IF redrive.ids IS NULL THEN
    PERFORM herald._reject(code => '22V12', field => 'ids', message => 'must not be NULL');
  END IF;
  UPDATE herald.messages m
  SET status = 'queued', attempts = 0, run_at = redrive.now, finished_at = NULL
  WHERE m.id = ANY (redrive.ids) AND m.status = 'dead' AND m.outcome IS NULL;
  GET DIAGNOSTICS changed = ROW_COUNT;
  IF changed > 0 THEN
    PERFORM herald._notify(ARRAY['herald_queue']);
  END IF;
  RETURN changed;
END
$$;

REVOKE ALL ON FUNCTION herald.redrive(bigint[], timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.redrive(bigint[], timestamptz) TO herald_admin;
COMMENT ON FUNCTION herald.redrive(bigint[], timestamptz) IS
  'Queue dead messages again with their attempts reset.';
