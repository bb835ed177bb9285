-- herald._check_clock(now) — the rule for every `now` argument, evaluated first by
-- every function that takes one (a DECLARE initializer). The transaction's now()
-- passes at the cost of one comparison (one SQL expression, inlined); anything else
-- goes to herald._refuse_clock, which refuses NULL (22V12 'now') and any clock from
-- roles below herald_admin (42501 'now'): tests and admins may fix time; producers
-- cannot forge created_at or jump queues, workers cannot steal leases or claim early.
-- Locks: none.
CREATE OR REPLACE FUNCTION herald._check_clock(now timestamptz)
RETURNS boolean
LANGUAGE sql
STABLE
AS $$
  SELECT CASE WHEN now IS DISTINCT FROM pg_catalog.now() THEN herald._refuse_clock(now => now) ELSE true END
$$;

REVOKE ALL ON FUNCTION herald._check_clock(timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION herald._check_clock(timestamptz) IS
  'Private: pass the transaction''s now(); anything else goes to herald._refuse_clock (inlined).';
