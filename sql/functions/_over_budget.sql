-- herald._over_budget(clear_at, now, recipient_window, recipient_limit) — how far a
-- recipient's budget (herald.recipient_buckets.clear_at, the time it is whole again)
-- runs past what recipient_limit allows at `now`: clear_at - now - recipient_limit
-- steps of recipient_window / recipient_limit (the step rounded as each message
-- counts it). Above zero: over the limit. The one reading of the limit for
-- herald._spend_recipients and herald.recipient_wait. IMMUTABLE SQL, inlined. Locks: none.
CREATE OR REPLACE FUNCTION herald._over_budget(clear_at timestamptz, now timestamptz, recipient_window interval,
                                               recipient_limit integer)
RETURNS interval
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT clear_at - now - recipient_window / recipient_limit * recipient_limit
$$;

REVOKE ALL ON FUNCTION herald._over_budget(timestamptz, timestamptz, interval, integer) FROM PUBLIC;
COMMENT ON FUNCTION herald._over_budget(timestamptz, timestamptz, interval, integer) IS
  'Private: how far a recipient''s budget runs past its channel''s recipient_limit (above zero: over).';
