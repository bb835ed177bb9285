-- herald._over_budget(clear_at, now, budget_window, budget_limit) — how far a budget
-- (a recipient's or number range's herald.recipient_buckets.clear_at, a producer's
-- herald.producer_buckets.clear_at: the time it is whole again) runs past what
-- budget_limit per budget_window allows at `now`: clear_at - now - budget_limit steps
-- of budget_window / budget_limit (the step rounded as each message counts it). Above
-- zero: over the limit. The one reading of a limit for herald._spend_recipients,
-- herald._spend_producer, herald.recipient_wait and herald.producer_wait. IMMUTABLE
-- SQL, inlined. Locks: none.
CREATE OR REPLACE FUNCTION herald._over_budget(clear_at timestamptz, now timestamptz, budget_window interval,
                                               budget_limit integer)
RETURNS interval
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT clear_at - now - budget_window / budget_limit * budget_limit
$$;

REVOKE ALL ON FUNCTION herald._over_budget(timestamptz, timestamptz, interval, integer) FROM PUBLIC;
COMMENT ON FUNCTION herald._over_budget(timestamptz, timestamptz, interval, integer) IS
  'Private: how far a budget (a recipient''s, a number range''s, a producer''s) runs past its limit (above zero: over).';
