-- herald._budget_after(clear_at, now, spent) — a budget's clear_at (the time it is
-- whole again: herald.recipient_buckets, herald.producer_buckets) after `spent` more is
-- taken from it at `now`: the spending starts from the later of clear_at and now (a
-- budget cannot bank unused time), NULL clear_at (no row yet) counting as now. The one
-- spending rule of herald._spend_recipients, herald._spend_producer,
-- herald.recipient_wait and herald.producer_wait (herald._over_budget reads the result).
-- STABLE like timestamptz + interval (a day's length depends on the time zone): a
-- function declared less volatile than its body is not inlined. Locks: none.
CREATE OR REPLACE FUNCTION herald._budget_after(clear_at timestamptz, now timestamptz, spent interval)
RETURNS timestamptz
LANGUAGE sql
STABLE
AS $$
  SELECT greatest(clear_at, now) + spent
$$;
REVOKE ALL ON FUNCTION herald._budget_after(timestamptz, timestamptz, interval) FROM PUBLIC;
COMMENT ON FUNCTION herald._budget_after(timestamptz, timestamptz, interval) IS
  'Private: a budget''s clear_at after more is spent from it (inlined).';
