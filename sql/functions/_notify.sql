-- herald._notify(channels) — NOTIFY each of `channels` (herald_queue, herald_log)
-- with an empty payload when a listener may be waiting for it (herald._notify_due),
-- and set that channel's notify clock to now.
--
-- Why not always: a transaction that issues NOTIFY takes a database-wide lock while it
-- commits, so a NOTIFY in every enqueue serialises all producers' commits (measured:
-- it costs about a third of single-row enqueue throughput with 8 connections on 2
-- cores, README "Performance"). herald._notify_due holds the rule: notify when some
-- listener said it may be waiting since the last notification (herald._listening
-- set the clock to 0), or when none went out for herald.notify_interval_ms (default
-- 50; 0 = notify in every call: ALTER DATABASE … SET herald.notify_interval_ms = 0);
-- otherwise every listener is awake and will claim or read again without being told.
-- Clocks are microseconds since the epoch in sequences (migration 002; release 1
-- kept milliseconds there, which read as long ago and heal at the first
-- notification): reading last_value and setval take no row lock and survive
-- rollback, so producers never wait on one another here. Two sessions may both
-- notify; that is harmless.
-- The contract for listeners (README, "Notifications"): a notification is a hint;
-- after waking, claim again a little later (the runner: 10 ms) and poll as well.
-- Locks: none (the NOTIFY itself takes the notify lock at commit).
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
