-- herald._quiet_end(quiet_from, quiet_until, quiet_days, quiet_zone, at, recipient_zone,
-- zone_known) — when the quiet time `at` falls in ends: the first instant at or after
-- `at` outside a channel's quiet hours and days (herald._quiet) in recipient_zone when
-- given, else quiet_zone; `at` itself outside them. Hours end at quiet_until, a quiet
-- day at the next local midnight, and the two chain (Saturday 22:00 with 21:00-08:00
-- and Sundays quiet: Monday 08:00); in local time, so a daylight-saving change moves
-- the end with the clocks. A zone the server's zone database no longer has (tzdata
-- dropped a legacy name, herald._time_zone) fails no claim: a recipient_zone gives way
-- to quiet_zone, and with neither known it is NULL (herald._channel_quiet closes such
-- a channel). zone_known: the caller knows the server has quiet_zone (claim_batch: the
-- channel is open), which spares its look-up (a subtransaction). For herald._enqueue,
-- claim_batch (quiet_per_recipient) and herald.quiet_channels. PL/pgSQL, not inlined:
-- statements that may call it would otherwise build its whole expression each time.
-- STABLE (the zone database). Locks: none.
CREATE OR REPLACE FUNCTION herald._quiet_end(quiet_from time, quiet_until time, quiet_days smallint[], quiet_zone text,
                                             at timestamptz, recipient_zone text DEFAULT NULL,
                                             zone_known boolean DEFAULT false)
RETURNS timestamptz
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
  v_zone text := CASE WHEN herald._time_zone(name => recipient_zone) THEN recipient_zone
                      WHEN zone_known OR herald._time_zone(name => quiet_zone) THEN quiet_zone END;
  v_at timestamptz := at;
  v_local timestamp;
BEGIN
  IF v_zone IS NULL THEN
    RETURN NULL;
  END IF;
  -- At most six quiet days and the hours around them: a few steps reach the end.
  FOR i IN 1 .. 16 LOOP
    IF NOT herald._quiet(quiet_from => quiet_from, quiet_until => quiet_until, quiet_days => quiet_days,
                         quiet_zone => v_zone, now => v_at) THEN
      RETURN v_at;
    END IF;
    v_local := v_at AT TIME ZONE v_zone;
    IF quiet_days IS NOT NULL AND extract(isodow FROM v_local)::smallint = ANY (quiet_days) THEN
      v_at := (v_local::date + 1)::timestamp AT TIME ZONE v_zone;
    ELSE
      v_at := (v_local::date + CASE WHEN quiet_from > quiet_until AND v_local::time >= quiet_from THEN 1 ELSE 0 END
               + quiet_until) AT TIME ZONE v_zone;
    END IF;
  END LOOP;
  RETURN v_at;
END
$$;
REVOKE ALL ON FUNCTION herald._quiet_end(time, time, smallint[], text, timestamptz, text, boolean) FROM PUBLIC;
COMMENT ON FUNCTION herald._quiet_end(time, time, smallint[], text, timestamptz, text, boolean) IS
  'Private: when the quiet time a time falls in ends (the time itself outside it; NULL when no zone is known).';
