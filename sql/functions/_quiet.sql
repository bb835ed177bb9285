-- herald._quiet(quiet_from, quiet_until, quiet_days, quiet_zone, now) — whether `now`
-- falls in a channel's quiet hours: its local time in quiet_zone is at or after
-- quiet_from and before quiet_until (hours that span midnight when quiet_until is
-- earlier), or its local day of the week (ISO: 1 Monday .. 7 Sunday) is one of
-- quiet_days; false when the channel has neither (both NULL). For claim_batch, which
-- hands out no message of a channel in its quiet hours, and herald._quiet_end. STABLE
-- (the zone database), inlined. Locks: none.
CREATE OR REPLACE FUNCTION herald._quiet(quiet_from time, quiet_until time, quiet_days smallint[], quiet_zone text,
                                         now timestamptz)
RETURNS boolean
LANGUAGE sql
STABLE
AS $$
  SELECT quiet_from IS NOT NULL
         AND CASE WHEN quiet_from < quiet_until
                  THEN (now AT TIME ZONE quiet_zone)::time >= quiet_from AND (now AT TIME ZONE quiet_zone)::time < quiet_until
                  ELSE (now AT TIME ZONE quiet_zone)::time >= quiet_from OR (now AT TIME ZONE quiet_zone)::time < quiet_until
             END
      OR quiet_days IS NOT NULL AND extract(isodow FROM now AT TIME ZONE quiet_zone)::smallint = ANY (quiet_days)
$$;
REVOKE ALL ON FUNCTION herald._quiet(time, time, smallint[], text, timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION herald._quiet(time, time, smallint[], text, timestamptz) IS
  'Private: whether a time falls in a channel''s quiet hours or days (inlined).';
