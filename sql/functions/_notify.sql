-- herald._notify(channels) — NOTIFY each of `channels` (herald_queue, herald_log) with
-- an empty payload when a listener may be waiting (herald._notify_due), and set that
-- channel's notify clock to now. A transaction that issues NOTIFY takes a
-- database-wide lock while it commits, so notifying in every statement would serialise
-- producers' commits: herald notifies when a listener set the clock to 0
-- (herald._listening) since the last notification, or when none went out for
-- herald.notify_interval_ms (default 50; 0 = always). The clocks are sequences
-- (microseconds since the epoch): no row lock, not rolled back; two sessions may both
-- notify, harmlessly. Listeners treat a notification as a hint and also poll.
-- Locks: none (NOTIFY takes its lock at commit).
CREATE OR REPLACE FUNCTION herald._notify(channels text[])
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
  ch text;
BEGIN
  FOREACH ch IN ARRAY channels LOOP
    CONTINUE WHEN NOT herald._notify_due(ch);
    PERFORM setval(CASE ch WHEN 'herald_queue' THEN 'herald.notify_clock_queue'::regclass
                           ELSE 'herald.notify_clock_log'::regclass END,
                   (date_part('epoch', clock_timestamp()) * 1000000)::bigint);
    PERFORM pg_notify(ch, '');
  END LOOP;
END
$$;

REVOKE ALL ON FUNCTION herald._notify(text[]) FROM PUBLIC;
COMMENT ON FUNCTION herald._notify(text[]) IS
  'Private: NOTIFY the channels whose listeners may be waiting, and set their clocks.';
