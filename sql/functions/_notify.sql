-- herald._notify(channel) — NOTIFY `channel` (herald_queue or herald_log) with an
-- empty payload, at most about once per herald.notify_interval_ms (default 1 ms)
-- across all sessions.
--
-- Why throttle: a transaction that issues NOTIFY takes a database-wide lock while it
-- commits, so a NOTIFY in every enqueue serialises all producers' commits (measured:
-- it halves single-row enqueue throughput with 8 connections). Under load, one
-- notification per interval wakes the listeners just as well.
-- How: the time of the last NOTIFY (ms since the epoch) is kept in a sequence
-- (herald.notify_clock_queue / herald.notify_clock_log): reading last_value and
-- setval take no row lock and survive rollback, so producers never wait for one
-- another here. Two sessions may both notify in the same interval; that is harmless.
-- A transaction older than the interval always notifies: it may commit long after the
-- listeners woke for the last notification.
-- The contract for listeners (see README): a notification is a hint and may cover
-- messages committed up to 2 intervals after it; after waking, claim again once that
-- much later, and poll as well. Setting herald.notify_interval_ms to 0 notifies in
-- every transaction (ALTER DATABASE … SET herald.notify_interval_ms = 0).
-- Locks: none (the NOTIFY itself takes the notify lock at commit).
CREATE OR REPLACE FUNCTION herald._notify(channel text)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
  interval_ms bigint := coalesce(nullif(current_setting('herald.notify_interval_ms', true), '')::bigint, 1);
  now_ms bigint;
  last_ms bigint;
BEGIN
  IF interval_ms > 0 AND clock_timestamp() - now() < interval_ms * interval '1 millisecond' THEN
    now_ms := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
    IF channel = 'herald_queue' THEN
      SELECT s.last_value INTO last_ms FROM herald.notify_clock_queue s;
    ELSE
      SELECT s.last_value INTO last_ms FROM herald.notify_clock_log s;
    END IF;
    IF now_ms - last_ms < interval_ms THEN
      RETURN; -- a notification went out less than an interval ago
    END IF;
    IF channel = 'herald_queue' THEN
      PERFORM setval('herald.notify_clock_queue', now_ms);
    ELSE
      PERFORM setval('herald.notify_clock_log', now_ms);
    END IF;
  END IF;
  PERFORM pg_notify(channel, '');
END
$$;

REVOKE ALL ON FUNCTION herald._notify(text) FROM PUBLIC;
