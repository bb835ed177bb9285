-- herald._quiet_end(quiet_from, quiet_until, quiet_zone, at) — when the quiet hours
-- that `at` falls in end: the first instant after `at` whose local time in quiet_zone
-- is quiet_until; `at` itself when it falls in none (herald._quiet; quiet_from NULL:
-- never). Counted in local dates and times, so a daylight-saving change moves the end
-- with the clocks (08:00 in Berlin is 06:00 UTC in summer, 07:00 in winter). For
-- herald._enqueue, which stores a message of a channel with quiet_per_recipient due
-- at the end of its recipient's quiet hours, and herald.claim_batch, which moves one
-- it finds in them there. PL/pgSQL, not inlined: the statements that may call it
-- (every enqueue's INSERT, every claim) would otherwise build its whole expression at
-- each execution, called or not. STABLE (the zone database). Locks: none.
CREATE OR REPLACE FUNCTION herald._quiet_end(quiet_from time, quiet_until time, quiet_zone text, at timestamptz)
RETURNS timestamptz
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
  v_local timestamp := at AT TIME ZONE quiet_zone;
BEGIN
  IF NOT herald._quiet(quiet_from => quiet_from, quiet_until => quiet_until, quiet_zone => quiet_zone, now => at) THEN
    RETURN at;
  END IF;
  RETURN (v_local::date + CASE WHEN quiet_from > quiet_until AND v_local::time >= quiet_from THEN 1 ELSE 0 END
          + quiet_until) AT TIME ZONE quiet_zone;
END
$$;
REVOKE ALL ON FUNCTION herald._quiet_end(time, time, text, timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION herald._quiet_end(time, time, text, timestamptz) IS
  'Private: when the quiet hours a time falls in end (the time itself outside them).';
