-- herald.cancel(id, now) — cancel a message that is still 'queued'; returns true when
-- it was cancelled, false when it is unknown or in any other state (a message being
-- sent, or already finished, cannot be cancelled).
-- Index: the primary key. Locks: the row. Admin only (herald_admin).
CREATE OR REPLACE FUNCTION herald.cancel(id bigint, now timestamptz DEFAULT now())
RETURNS boolean
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  WITH cancelled AS (
    UPDATE herald.messages m
    SET status = 'cancelled', finished_at = cancel.now
    WHERE m.id = cancel.id AND m.status = 'queued'
    RETURNING 1
  )
  SELECT EXISTS (SELECT FROM cancelled)
$$;

REVOKE ALL ON FUNCTION herald.cancel(bigint, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.cancel(bigint, timestamptz) TO herald_admin;
