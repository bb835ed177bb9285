-- herald._check_clock(now) — the rule for every `now` argument: NULL is refused (22V12
-- 'now'), and a clock other than the transaction's now() is taken only from members of
-- herald_admin (42501 'now'): tests and admins may fix time; producers cannot forge
-- created_at or jump queues, workers cannot steal leases or claim scheduled messages.
-- Callers skip the call when now = pg_catalog.now() (the default). Locks: none.
CREATE OR REPLACE FUNCTION herald._check_clock(now timestamptz)
RETURNS void
LANGUAGE plpgsql
STABLE
AS $$
BEGIN
  IF now IS NULL THEN
    PERFORM herald._reject(code => '22V12', field => 'now', message => 'must not be NULL',
                           hint => 'leave it out: the database clock is used');
  END IF;
  IF now <> pg_catalog.now() AND NOT pg_has_role(herald._caller(), 'herald_admin', 'MEMBER') THEN
    RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege', COLUMN = 'now',
      MESSAGE = 'now: only herald_admin may pass a clock', HINT = 'leave it out: the database clock is used';
  END IF;
END
$$;

REVOKE ALL ON FUNCTION herald._check_clock(timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION herald._check_clock(timestamptz) IS
  'Private: refuse a NULL clock, and any clock but now() from roles below herald_admin.';
