-- herald.quiet_channels() — the channels in their quiet time now (quiet hours or quiet
-- days in their quiet_zone, herald._channel_quiet), whose messages claim_batch holds back,
-- with when that time ends (quiet_until, herald._quiet_end). A channel with
-- quiet_per_recipient is never listed: it is never quiet as a whole (its messages wait
-- as scheduled ones, herald.queue_depth). quiet_until is NULL for a channel held
-- because the server's zone database does not have its quiet_zone (any channel with
-- quiet hours or days, herald._channel_quiet): it waits until the zone is fixed. The
-- runner samples it with herald.queue_depth for the herald_channel_quiet gauge, which
-- the shipped backlog alert consults (a quiet channel's backlog is expected; not that
-- of one with no end: the gauge leaves it out). Reads herald.channels.
-- Locks: none. SECURITY DEFINER for herald_worker (the helpers are private).
CREATE OR REPLACE FUNCTION herald.quiet_channels()
RETURNS TABLE (channel text, quiet_until timestamptz)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT c.name,
         herald._quiet_end(quiet_from => c.quiet_from, quiet_until => c.quiet_until, quiet_days => c.quiet_days,
                           quiet_zone => c.quiet_zone, at => now())
  FROM herald.channels c
  WHERE herald._channel_quiet(quiet_from => c.quiet_from, quiet_until => c.quiet_until, quiet_days => c.quiet_days,
                              quiet_zone => c.quiet_zone, quiet_per_recipient => c.quiet_per_recipient, now => now())
  ORDER BY c.name
$$;

REVOKE ALL ON FUNCTION herald.quiet_channels() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.quiet_channels() TO herald_worker, herald_admin;
COMMENT ON FUNCTION herald.quiet_channels() IS 'The channels in their quiet hours or days now, and when those end (NULL: never, as the server does not know its quiet_zone).';
