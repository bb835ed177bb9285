-- herald._notify(channels) — NOTIFY each of `channels` (herald_queue, herald_log)
-- with an empty payload when a listener may be waiting for it.
--
-- Why not always: a transaction that issues NOTIFY takes a database-wide lock while it
-- commits, so a NOTIFY in every enqueue serialises all producers' commits (measured:
-- it costs about a third of single-row enqueue throughput with 8 connections on 2
-- cores, README "Performance").
-- The rule, per channel: notify when the channel's listen clock (set by
-- herald._listening when claim_batch or log_read is called: its caller may be about
-- to wait) is not older than its notify clock (the last notification), i.e. some
-- listener started waiting after the last notification went out; otherwise every
-- listener is awake and will claim or read again without being told. As a fallback
-- for listeners that never call those functions, and for a notification lost to a
-- rollback, also notify when none went out for herald.notify_interval_ms (default
-- 50; 0 = notify in every call: ALTER DATABASE … SET herald.notify_interval_ms = 0).
-- Clocks are microseconds since the epoch (finer than one round trip, so a claim and
-- the enqueue after it never share a tick) in sequences (migrations 002 and 004;
-- release 1 kept milliseconds there, which read as long ago and heal at the first
-- notification):
-- reading last_value and setval take no row lock and survive rollback, so producers
-- never wait on one another here. Two sessions may both notify; that is harmless.
-- The contract for listeners (README, "Notifications"): a notification is a hint;
-- after waking, claim again a little later (the runner: 10 ms) and poll as well.
-- Locks: none (the NOTIFY itself takes the notify lock at commit).
CREATE OR REPLACE FUNCTION herald._notify(channels text[])
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
  interval_us bigint := coalesce(nullif(current_setting('herald.notify_interval_ms', true), '')::bigint, 50) * 1000;
  now_us bigint := (date_part('epoch', clock_timestamp()) * 1000000)::bigint;
  listened bigint;
  notified bigint;
  ch text;
BEGIN
  FOREACH ch IN ARRAY channels LOOP
    -- pg_sequence_last_value reads a sequence ten times cheaper than SELECT … FROM it
    -- (this runs in every producer's statement); NULL until the sequence is first set.
    IF ch = 'herald_queue' THEN
      listened := coalesce(pg_sequence_last_value('herald.listen_clock_queue'), 0);
      notified := coalesce(pg_sequence_last_value('herald.notify_clock_queue'), 0);
    ELSE
      listened := coalesce(pg_sequence_last_value('herald.listen_clock_log'), 0);
      notified := coalesce(pg_sequence_last_value('herald.notify_clock_log'), 0);
    END IF;
    CONTINUE WHEN listened < notified AND now_us - notified < interval_us;
    PERFORM setval(CASE ch WHEN 'herald_queue' THEN 'herald.notify_clock_queue'::regclass
                           ELSE 'herald.notify_clock_log'::regclass END, now_us);
    PERFORM pg_notify(ch, '');
  END LOOP;
END
$$;

REVOKE ALL ON FUNCTION herald._notify(text[]) FROM PUBLIC;
