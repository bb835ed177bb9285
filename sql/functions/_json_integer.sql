-- herald._json_integer(item, key, prefix, code) — read an integer field of an
-- enqueue_batch element: a JSON number without fraction or a string of digits (at
-- most 9). Absent or null gives NULL; anything else raises `code` with
-- COLUMN = '<prefix>.<key>'. Locks: none.
CREATE OR REPLACE FUNCTION herald._json_integer(item jsonb, key text, prefix text, code text)
RETURNS integer
LANGUAGE plpgsql
IMMUTABLE
AS $$
DECLARE
  v jsonb := item -> key;
  s text;
BEGIN
  IF v IS NULL OR v = 'null' THEN
    RETURN NULL;
  END IF;
  s := v #>> '{}';
  IF jsonb_typeof(v) NOT IN ('number', 'string') OR s !~ '^-?[0-9]{1,9}$' THEN
    PERFORM herald._reject(code, prefix || '.' || key, format('must be an integer, not %s', v));
  END IF;
  RETURN s::integer;
END
$$;

REVOKE ALL ON FUNCTION herald._json_integer(jsonb, text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION herald._json_integer(jsonb, text, text, text) IS
  'Private: an integer field of a JSON element, or the error naming it.';
