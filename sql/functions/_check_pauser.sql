-- herald._check_pauser(by) — who may pause or resume a channel: by is 'operator'
-- (herald_admin only) or 'runner' (herald_worker or herald_admin). Raises 22V12 by
-- for another value, 42501 by for 'operator' from a role below herald_admin.
-- Locks: none.
CREATE OR REPLACE FUNCTION herald._check_pauser(by text)
RETURNS void
LANGUAGE plpgsql
STABLE
AS $$
BEGIN
  IF by NOT IN ('operator', 'runner') THEN
    PERFORM herald._reject(code => '22V12', field => 'by', message => format('%L is neither operator nor runner', by));
  END IF;
  IF by = 'operator' AND NOT pg_has_role(herald._caller(), 'herald_admin', 'MEMBER') THEN
    RAISE EXCEPTION 'by: only herald_admin may pause or resume as operator'
      USING ERRCODE = '42501', COLUMN = 'by', HINT = 'a runner passes by => ''runner''';
  END IF;
END
$$;

REVOKE ALL ON FUNCTION herald._check_pauser(text) FROM PUBLIC;
COMMENT ON FUNCTION herald._check_pauser(text) IS
  'Private: refuse a pause or resume by someone who may not (operator: herald_admin only).';
