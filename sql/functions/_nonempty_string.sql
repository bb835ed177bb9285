-- herald._nonempty_string(obj, key) — true when obj has key and its value is a JSON
-- string other than "". Used by herald._validate to name the key that fails
-- (herald._valid tests the same rule with one SQL/JSON path per kind).
-- Immutable; inlined. Locks: none.
CREATE OR REPLACE FUNCTION herald._nonempty_string(obj jsonb, key text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT coalesce(jsonb_typeof(obj -> key) = 'string' AND obj ->> key <> '', false)
$$;

REVOKE ALL ON FUNCTION herald._nonempty_string(jsonb, text) FROM PUBLIC;
COMMENT ON FUNCTION herald._nonempty_string(jsonb, text) IS
  'Private: true when a JSON object''s key holds a non-empty string.';
