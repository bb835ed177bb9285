-- herald._nonempty_string(value jsonb) — true when value is a JSON string other than "".
-- Used by payload validation. Immutable; inlined by the planner. Locks: none.
CREATE OR REPLACE FUNCTION herald._nonempty_string(value jsonb)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT coalesce(jsonb_typeof(value) = 'string' AND value <> '""'::jsonb, false)
$$;

REVOKE ALL ON FUNCTION herald._nonempty_string(jsonb) FROM PUBLIC;
