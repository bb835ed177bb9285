-- herald._append_error(errors, entry) — a message's error history with one more
-- entry: appended at the end, the oldest dropped once there are 20. The one place
-- that rule lives (fail and reap_stale use it). Immutable SQL, inlined. Locks: none.
CREATE OR REPLACE FUNCTION herald._append_error(errors jsonb, entry jsonb)
RETURNS jsonb
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT (CASE WHEN jsonb_array_length(errors) >= 20 THEN errors - 0 ELSE errors END) || jsonb_build_array(entry)
$$;

REVOKE ALL ON FUNCTION herald._append_error(jsonb, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION herald._append_error(jsonb, jsonb) IS
  'Private: append an entry to a message''s error history, keeping the last 20.';
