-- herald.redrive(ids, now) — send dead messages again: 'dead' -> 'queued' with
-- attempts reset to 0 and run_at = now; the error history is kept. Ids that are not
-- dead are ignored. Returns how many were redriven.
-- Index: the primary key. Locks: the rows. Admin only (herald_admin).
CREATE OR REPLACE FUNCTION herald.redrive(ids bigint[], now timestamptz DEFAULT now())
RETURNS integer
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  WITH redriven AS (
    UPDATE herald.messages m
    SET status = 'queued', attempts = 0, run_at = redrive.now, finished_at = NULL
    WHERE m.id = ANY (redrive.ids) AND m.status = 'dead'
    RETURNING 1
  )
  SELECT count(*)::integer FROM redriven
$$;

REVOKE ALL ON FUNCTION herald.redrive(bigint[], timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.redrive(bigint[], timestamptz) TO herald_admin;
