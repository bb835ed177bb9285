-- herald._named_producer(name) — 'intake:<name>' for a producer named in the setting
-- herald.producer, once the caller is known to be a member of herald_intake.
-- Errors: 42501 COLUMN 'herald.producer' when the caller is not a member of
-- herald_intake; 22V12 'herald.producer' when the name is not 1 to 64 of [A-Za-z0-9._-].
-- Locks: none.
CREATE OR REPLACE FUNCTION herald._named_producer(name text)
RETURNS text
LANGUAGE plpgsql
STABLE
AS $$
BEGIN
  IF NOT pg_has_role(herald._caller(), 'herald_intake', 'MEMBER') THEN
    RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege', COLUMN = 'herald.producer',
      MESSAGE = 'herald.producer: only members of herald_intake may name the producer they serve';
  END IF;
  IF name !~ '^[A-Za-z0-9._-]{1,64}$' THEN
    PERFORM herald._reject(code => '22V12', field => 'herald.producer', message => 'must be 1 to 64 of A-Z a-z 0-9 . _ -');
  END IF;
  RETURN 'intake:' || name;
END
$$;

REVOKE ALL ON FUNCTION herald._named_producer(text) FROM PUBLIC;
COMMENT ON FUNCTION herald._named_producer(text) IS
  'Private: intake:<name> for a producer named in herald.producer, checked against the caller''s role.';
