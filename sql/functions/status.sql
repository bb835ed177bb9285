-- herald.status(id) — what happened to one message: one row, or none when the id is
-- unknown (or purged). (The id is not repeated in the result: PostgreSQL does not let
-- an output column share the argument's name.) Gives no payload, recipient or metadata: producers may read it.
-- Index: the primary key. Locks: none.
-- SECURITY DEFINER for herald_producer (which has no table access).
CREATE OR REPLACE FUNCTION herald.status(id bigint)
RETURNS TABLE (
  channel text,
  status text,
  attempts integer,
  max_attempts integer,
  run_at timestamptz,
  created_at timestamptz,
  finished_at timestamptz,
  last_error text,
  last_error_class text,
  provider_message_id text
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT m.channel, m.status, m.attempts, m.max_attempts, m.run_at, m.created_at,
         m.finished_at, m.last_error, m.last_error_class, m.provider_message_id
  FROM herald.messages m
  WHERE m.id = status.id
$$;

REVOKE ALL ON FUNCTION herald.status(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.status(bigint) TO herald_producer, herald_worker, herald_admin;
COMMENT ON FUNCTION herald.status(bigint) IS
  'What happened to one message: state, attempts, times, last error, receipt.';
