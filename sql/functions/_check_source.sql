-- herald._check_source(source) — refuse the name of a reporter of delivery events or
-- opt-outs that is NULL or not 1 to 32 of a-z, 0-9, _ starting with a letter (22V12
-- COLUMN 'source'): it is stored in herald.delivery_events and herald.suppressions.
-- Locks: none.
CREATE OR REPLACE FUNCTION herald._check_source(source text)
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
AS $$
BEGIN
  IF source IS NULL OR source !~ '^[a-z][a-z0-9_]{0,31}$' THEN
    PERFORM herald._reject(code => '22V12', field => 'source', message => 'must be a name of 1 to 32 of a-z, 0-9, _');
  END IF;
END
$$;

REVOKE ALL ON FUNCTION herald._check_source(text) FROM PUBLIC;
COMMENT ON FUNCTION herald._check_source(text) IS 'Private: 22V12 source unless a name of 1 to 32 of a-z, 0-9, _.';
