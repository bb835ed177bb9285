-- herald._check_not_null(fields, present) — refuse the first argument given as NULL:
-- 22V12 with its name in COLUMN, for arguments that have no meaning when NULL.
-- Locks: none.
CREATE OR REPLACE FUNCTION herald._check_not_null(fields text[], present boolean[])
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
AS $$
DECLARE
  i integer;
BEGIN
  FOR i IN 1 .. cardinality(fields) LOOP
    IF NOT present[i] THEN
      PERFORM herald._reject(code => '22V12', field => fields[i], message => 'must not be NULL');
    END IF;
  END LOOP;
END
$$;

REVOKE ALL ON FUNCTION herald._check_not_null(text[], boolean[]) FROM PUBLIC;
COMMENT ON FUNCTION herald._check_not_null(text[], boolean[]) IS
  'Private: refuse the first argument that is NULL (22V12, named in COLUMN).';
