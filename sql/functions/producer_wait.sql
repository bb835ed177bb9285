-- herald.producer_wait() — how many seconds until the calling producer
-- (herald._producer(): the role, or the intake's named producer) is let in again
-- after a suspension for its bounce or complaint rate (herald.producers
-- .suspended_until); NULL when it is not suspended. The HTTP intake answers it as
-- Retry-After. A producer learns only its own. Errors: those of herald._producer.
-- Index: producers_pkey. Locks: none. SECURITY DEFINER for herald_producer.
CREATE OR REPLACE FUNCTION herald.producer_wait()
RETURNS integer
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT ceil(extract(epoch FROM p.suspended_until - now()))::integer
  FROM herald.producers p
  WHERE p.producer = herald._producer() AND p.suspended_until > now()
$$;

REVOKE ALL ON FUNCTION herald.producer_wait() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.producer_wait() TO herald_producer, herald_admin;
COMMENT ON FUNCTION herald.producer_wait() IS
  'Seconds until the calling producer''s suspension for its bounce or complaint rate ends; NULL when not suspended.';
