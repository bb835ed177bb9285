-- herald._channel_quiet(quiet_from, quiet_until, quiet_days, quiet_zone,
-- quiet_per_recipient, now) — whether a channel is closed as a whole by its quiet time
-- at `now`: in its quiet hours or days in quiet_zone (herald._quiet), unless those are
-- each recipient's (quiet_per_recipient: never closed as a whole; its messages wait
-- one by one). Closed too, with either, while its quiet_zone is not a zone the server
-- knows (herald._time_zone: tzdata dropped a legacy name after it was written), as
-- its quiet hours cannot be told; a channel without quiet hours or days never is. For
-- herald.claim_batch, which hands out nothing of such a channel, and
-- herald.quiet_channels, which lists them. STABLE (the zone database), inlined.
-- Locks: none.
CREATE OR REPLACE FUNCTION herald._channel_quiet(quiet_from time, quiet_until time, quiet_days smallint[], quiet_zone text,
                                                 quiet_per_recipient boolean, now timestamptz)
RETURNS boolean
LANGUAGE sql
STABLE
AS $$
  SELECT CASE WHEN quiet_from IS NULL AND quiet_days IS NULL THEN false
              WHEN NOT herald._time_zone(name => quiet_zone) THEN true
              ELSE NOT quiet_per_recipient
                   AND herald._quiet(quiet_from => quiet_from, quiet_until => quiet_until, quiet_days => quiet_days,
                                     quiet_zone => quiet_zone, now => now)
         END
$$;
REVOKE ALL ON FUNCTION herald._channel_quiet(time, time, smallint[], text, boolean, timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION herald._channel_quiet(time, time, smallint[], text, boolean, timestamptz) IS
  'Private: whether a channel is closed as a whole by its quiet hours or days, or by a quiet_zone the server does not know (inlined).';
