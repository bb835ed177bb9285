-- herald._refuse_clock(now) — for a clock other than the transaction's now(): NULL is
-- refused (22V12 'now'), any other value taken only from members of herald_admin
-- (42501 'now'); returns true when taken. Called through herald._check_clock.
-- Locks: none.
CREATE OR REPLACE FUNCTION herald._refuse_clock(now timestamptz)
RETURNS boolean
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
  RETURN true;
END
$$;

REVOKE ALL ON FUNCTION herald._refuse_clock(timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION herald._refuse_clock(timestamptz) IS
  'Private: refuse a NULL clock, and any clock but now() from roles below herald_admin.';
