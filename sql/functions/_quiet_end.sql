-- herald._quiet_end(quiet_from, quiet_until, quiet_days, quiet_zone, at) — when the
-- quiet time that `at` falls in ends: the first instant at or after `at` outside a
-- channel's quiet hours and quiet days (herald._quiet); `at` itself when it falls in
-- neither. Hours end at quiet_until, a quiet day at the next local midnight, and the
-- two chain (Saturday 22:00 with 21:00-08:00 and Sundays quiet: Monday 08:00).
-- Counted in local dates and times, so a daylight-saving change moves the end with
-- the clocks (08:00 in Berlin is 06:00 UTC in summer, 07:00 in winter). For
-- herald._enqueue (a message of a channel with quiet_per_recipient is stored due at
-- the end of its recipient's quiet time) and herald.claim_batch (which moves one it
-- finds in it there). PL/pgSQL, not inlined: the statements that may call it (every
-- enqueue's INSERT, every claim) would otherwise build its whole expression at each
-- execution, called or not. STABLE (the zone database). Locks: none.
CREATE OR REPLACE FUNCTION herald._quiet_end(quiet_from time, quiet_until time, quiet_days smallint[], quiet_zone text,
                                             at timestamptz)
RETURNS timestamptz
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
  v_at timestamptz := at;
  v_local timestamp;
BEGIN
  -- At most six quiet days and the hours around them: a few steps reach the end.
  FOR i IN 1 .. 16 LOOP
    IF NOT herald._quiet(quiet_from => quiet_from, quiet_until => quiet_until, quiet_days => quiet_days,
                         quiet_zone => quiet_zone, now => v_at) THEN
      RETURN v_at;
    END IF;
    v_local := v_at AT TIME ZONE quiet_zone;
    IF quiet_days IS NOT NULL AND extract(isodow FROM v_local)::smallint = ANY (quiet_days) THEN
      v_at := (v_local::date + 1)::timestamp AT TIME ZONE quiet_zone;
    ELSE
      v_at := (v_local::date + CASE WHEN quiet_from > quiet_until AND v_local::time >= quiet_from THEN 1 ELSE 0 END
               + quiet_until) AT TIME ZONE quiet_zone;
    END IF;
  END LOOP;
  RETURN v_at;
END
$$;
REVOKE ALL ON FUNCTION herald._quiet_end(time, time, smallint[], text, timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION herald._quiet_end(time, time, smallint[], text, timestamptz) IS
  'Private: when the quiet time a time falls in ends (the time itself outside it).';
