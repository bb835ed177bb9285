-- herald._budget_clock(now) — the time a budget (herald.producer_buckets,
-- herald.recipient_buckets) is counted at: when `now` is the transaction's own clock,
-- the real time (clock_timestamp(), read where it is called: in an ON CONFLICT
-- update, after the budget's row is locked), so an enqueue in a long transaction, or
-- one that waited for the row, is not refused for the age of its now(); a clock an
-- admin or a test gave, as given. One SQL expression, inlined. VOLATILE. Locks: none.
CREATE OR REPLACE FUNCTION herald._budget_clock(now timestamptz)
RETURNS timestamptz
LANGUAGE sql
VOLATILE
AS $$
  SELECT CASE WHEN now = pg_catalog.now() THEN clock_timestamp() ELSE now END
$$;
REVOKE ALL ON FUNCTION herald._budget_clock(timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION herald._budget_clock(timestamptz) IS
  'Private: the time a budget is counted at: the real time for the transaction''s own clock, else the clock given (inlined).';
