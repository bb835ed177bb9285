-- herald._shallow(value) — true when no value inside value lies more than 32 keys or
-- indexes below its top (in {"a": {"b": 1}} the 1 lies 2 below): the most nesting
-- herald takes in a payload, a dynamic_template_data or metadata, within what JSON
-- readers take by default once a webhook body wraps it (.NET 64 levels, Ruby 100,
-- Python about 1,000, Go 10,000: the runner's own). NULL for NULL.
-- IMMUTABLE SQL, one expression, inlined; walks at most 33 levels. Locks: none.
CREATE OR REPLACE FUNCTION herald._shallow(value jsonb)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT NOT value @? 'strict $.**{33}'
$$;
REVOKE ALL ON FUNCTION herald._shallow(jsonb) FROM PUBLIC;
COMMENT ON FUNCTION herald._shallow(jsonb) IS
  'Private: true when no value inside a JSON value lies more than 32 levels below its top (inlined).';
