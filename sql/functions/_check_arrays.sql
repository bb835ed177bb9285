-- herald._check_arrays(fields, lengths, required, code) — validate the parallel arrays
-- of a batch call (complete, fail, extend_lease: 22V12; enqueue_many: 22V11): the
-- first `required` arrays must not be NULL, and every non-NULL array must have the
-- length of the first. Raises `code` with the offending argument in COLUMN.
-- Locks: none.
CREATE OR REPLACE FUNCTION herald._check_arrays(fields text[], lengths integer[], required integer,
                                                code text DEFAULT '22V12')
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
AS $$
DECLARE
  i integer;
BEGIN
  FOR i IN 1 .. cardinality(fields) LOOP
    IF lengths[i] IS NULL THEN
      IF i <= required THEN
        PERFORM herald._reject(code => code, field => fields[i], message => 'must not be NULL');
      END IF;
    ELSIF lengths[i] <> lengths[1] THEN
      PERFORM herald._reject(code => code, field => fields[i],
        message => format('has %s elements but %s has %s', lengths[i], fields[1], lengths[1]));
    END IF;
  END LOOP;
END
$$;

REVOKE ALL ON FUNCTION herald._check_arrays(text[], integer[], integer, text) FROM PUBLIC;
COMMENT ON FUNCTION herald._check_arrays(text[], integer[], integer, text) IS
  'Private: raise an error naming a NULL or mismatched array argument of a batch call.';
