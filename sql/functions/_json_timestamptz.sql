-- herald._json_timestamptz(item, key, prefix, code) — read a timestamp field of an
-- enqueue_batch element: a string that casts to timestamptz (ISO 8601 recommended).
-- Absent or null gives NULL; anything else raises `code` with
-- COLUMN = '<prefix>.<key>'. The cast runs in a sub-block (a subtransaction) only
-- when the field is present. Stable (the cast reads TimeZone). Locks: none.
CREATE OR REPLACE FUNCTION herald._json_timestamptz(item jsonb, key text, prefix text, code text)
RETURNS timestamptz
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
  v jsonb := item -> key;
  t timestamptz;
BEGIN
  IF v IS NULL OR v = 'null' THEN
    RETURN NULL;
  END IF;
  IF jsonb_typeof(v) = 'string' THEN
    BEGIN
      t := (v #>> '{}')::timestamptz;
      RETURN t;
    EXCEPTION WHEN invalid_datetime_format OR datetime_field_overflow OR invalid_parameter_value THEN
      NULL; -- fall through to the herald error below
    END;
  END IF;
  PERFORM herald._reject(code, prefix || '.' || key,
    format('must be a timestamp string such as "2030-01-02T03:04:05Z", not %s', v));
  RETURN NULL;
END
$$;

REVOKE ALL ON FUNCTION herald._json_timestamptz(jsonb, text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION herald._json_timestamptz(jsonb, text, text, text) IS
  'Private: a timestamp field of a JSON element, or the error naming it.';
