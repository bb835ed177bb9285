-- herald._notify_clock_due(clock) — true when a notify clock holding `clock` says a
-- producer should NOTIFY: clock <= now - herald.notify_interval_ms (default 50;
-- 0 = always). A notify clock (one per channel, herald.notify_clock_queue
-- and herald.notify_clock_log) holds the time of the channel's last notification in
-- microseconds since the epoch, or 0 once a listener said it may be about to wait
-- (herald._listening): 0 is always due, a time is due when it is older than the
-- interval — the fallback for listeners that never call claim_batch or log_read,
-- and for a notification lost to a rollback. NULL (a clock never set) reads as due.
-- The arithmetic of herald._notify_due and of the NOTIFY trigger, which passes the
-- smaller of both channels' clocks: either channel due means the trigger calls
-- herald._notify. One SQL expression, so the planner inlines it.
-- Locks: none.
CREATE OR REPLACE FUNCTION herald._notify_clock_due(clock bigint)
RETURNS boolean
LANGUAGE sql
VOLATILE
AS $$
  SELECT coalesce(clock, 0)
           <= (date_part('epoch', clock_timestamp()) * 1000000)::bigint
              - coalesce(nullif(current_setting('herald.notify_interval_ms', true), '')::bigint, 50) * 1000
$$;

REVOKE ALL ON FUNCTION herald._notify_clock_due(bigint) FROM PUBLIC;
COMMENT ON FUNCTION herald._notify_clock_due(bigint) IS
  'Private: true when a notify clock says a notification is due (inlined).';
