-- herald._json_text(item, key, prefix, code) — read a string field of an enqueue_batch
-- element. Absent or null gives NULL; another JSON type raises `code` with
-- COLUMN = '<prefix>.<key>'. Locks: none.
CREATE OR REPLACE FUNCTION herald._json_text(item jsonb, key text, prefix text, code text)
RETURNS text
LANGUAGE plpgsql
IMMUTABLE
AS $$
DECLARE
  v jsonb := item -> key;
BEGIN
  IF v IS NULL OR v = 'null' THEN
    RETURN NULL;
  ELSIF jsonb_typeof(v) <> 'string' THEN
    PERFORM herald._reject(code, prefix || '.' || key, format('must be a string, not %s', jsonb_typeof(v)));
  END IF;
  RETURN v #>> '{}';
END
$$;

REVOKE ALL ON FUNCTION herald._json_text(jsonb, text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION herald._json_text(jsonb, text, text, text) IS
  'Private: a string field of a JSON element, or the error naming it.';
